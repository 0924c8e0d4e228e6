int is_prime(long n)
{
    if (n <= 3)
        return n > 1;
    if (n % 2 == 0 || n % 3 == 0)
        return 0;
    long k = 5;
    while (k * k <= n) {
        if (n % k == 0 || n % (k + 2) == 0)
            return 0;
        k += 6;
    }
    return 1;
}
