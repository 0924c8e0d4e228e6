unsigned long long power_mod(unsigned long long base, unsigned long long exp, unsigned long long mod)
{
    if (exp == 0)
        return 1 % mod;
    unsigned long long half = power_mod(base, exp / 2, mod);
    unsigned long long sq = half * half % mod;
    return exp % 2 ? sq * (base % mod) % mod : sq;
}
