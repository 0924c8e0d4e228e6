#include <cstdint>

// Return the n-th Fibonacci number, where fib(0) is 0 and fib(1) is 1 and
// every later number is the sum of the two before it.
std::uint64_t fibonacci(unsigned n) {
    std::uint64_t a = 0, b = 1;
    for (unsigned i = 0; i < n; ++i) {
        std::uint64_t t = a + b;
        a = b;
        b = t;
    }
    return a;
}
