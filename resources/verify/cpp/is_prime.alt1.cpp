#include <vector>

bool is_prime(long long n) {
    if (n < 2) return false;
    std::vector<bool> composite(n + 1, false);
    for (long long i = 2; i * i <= n; ++i) {
        if (composite[i]) continue;
        for (long long j = i * i; j <= n; j += i) composite[j] = true;
    }
    return !composite[n];
}
