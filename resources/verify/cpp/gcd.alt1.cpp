#include <numeric>

long long gcd(long long a, long long b) {
    return std::gcd(a, b);
}
