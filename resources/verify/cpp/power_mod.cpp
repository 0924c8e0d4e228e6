#include <cstdint>

// Compute base raised to the power exp modulo mod by repeated squaring,
// for a modulus greater than one; the result lies in [0, mod).
std::uint64_t power_mod(std::uint64_t base, std::uint64_t exp, std::uint64_t mod) {
    std::uint64_t result = 1;
    base %= mod;
    while (exp > 0) {
        if (exp & 1) result = result * base % mod;
        base = base * base % mod;
        exp >>= 1;
    }
    return result;
}
