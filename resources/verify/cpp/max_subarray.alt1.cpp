#include <vector>

long long max_subarray(const std::vector<int> &a) {
    std::vector<long long> prefix(a.size() + 1, 0);
    for (std::size_t i = 0; i < a.size(); ++i) prefix[i + 1] = prefix[i] + a[i];
    long long best = a[0], lowest = 0;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        if (prefix[i] - lowest > best) best = prefix[i] - lowest;
        if (prefix[i] < lowest) lowest = prefix[i];
    }
    return best;
}
