#include <cstdint>
#include <vector>

std::uint64_t fibonacci(unsigned n) {
    std::vector<std::uint64_t> memo(n + 2, 0);
    memo[1] = 1;
    for (unsigned k = 2; k <= n; ++k) memo[k] = memo[k - 1] + memo[k - 2];
    return memo[n];
}
