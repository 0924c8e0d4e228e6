/* Compute base raised to the power exp modulo mod by repeated squaring,
   for a modulus greater than one; the result lies in [0, mod). */
unsigned long long power_mod(unsigned long long base, unsigned long long exp, unsigned long long mod)
{
    unsigned long long result = 1;
    base %= mod;
    while (exp > 0) {
        if (exp & 1)
            result = result * base % mod;
        base = base * base % mod;
        exp >>= 1;
    }
    return result;
}
