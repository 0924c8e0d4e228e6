/* Decide whether the integer n is a prime number: return 1 when it is
   prime and 0 otherwise (numbers below two are not prime). */
int is_prime(long n)
{
    if (n < 2)
        return 0;
    for (long d = 2; d * d <= n; d++) {
        if (n % d == 0)
            return 0;
    }
    return 1;
}
