#include <cstdint>

std::uint64_t power_mod(std::uint64_t base, std::uint64_t exp, std::uint64_t mod) {
    if (exp == 0) return 1 % mod;
    std::uint64_t half = power_mod(base, exp / 2, mod);
    std::uint64_t sq = half * half % mod;
    return exp % 2 == 1 ? sq * (base % mod) % mod : sq;
}
