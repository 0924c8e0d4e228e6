/* Return the greatest common divisor of two non-negative integers a and b,
   using the Euclidean algorithm; gcd(0, 0) is 0. */
unsigned gcd(unsigned a, unsigned b)
{
    while (b != 0) {
        unsigned r = a % b;
        a = b;
        b = r;
    }
    return a;
}
