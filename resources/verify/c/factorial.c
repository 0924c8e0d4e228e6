/* Compute the factorial of n, the product of all positive integers up to
   and including n; the factorial of zero is one. */
unsigned long long factorial(unsigned n)
{
    unsigned long long result = 1;
    for (unsigned i = 2; i <= n; i++)
        result *= i;
    return result;
}
