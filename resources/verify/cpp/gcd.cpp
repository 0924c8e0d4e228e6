// Return the greatest common divisor of two non-negative integers a and b,
// using the Euclidean algorithm; gcd(0, 0) is 0.
long long gcd(long long a, long long b) {
    while (b != 0) {
        long long r = a % b;
        a = b;
        b = r;
    }
    return a;
}
