unsigned long long power_mod(unsigned long long base, unsigned long long exp, unsigned long long mod)
{
    unsigned long long r = 1 % mod;
    for (unsigned long long i = 0; i < exp; i++)
        r = r * (base % mod) % mod;
    return r;
}
