#include <algorithm>
#include <vector>

// Return the largest sum of a non-empty contiguous run of elements of the
// vector a (Kadane's algorithm, one pass).
long long max_subarray(const std::vector<int> &a) {
    long long best = a[0], current = a[0];
    for (std::size_t i = 1; i < a.size(); ++i) {
        current = std::max<long long>(a[i], current + a[i]);
        best = std::max(best, current);
    }
    return best;
}
