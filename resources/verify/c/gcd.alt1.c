unsigned gcd(unsigned x, unsigned y)
{
    return y == 0 ? x : gcd(y, x % y);
}
