/* Return the n-th Fibonacci number, where fib(0) is 0 and fib(1) is 1 and
   every later number is the sum of the two before it. */
long long fibonacci(int n)
{
    long long prev = 0, curr = 1;
    if (n == 0)
        return 0;
    for (int i = 1; i < n; i++) {
        long long next = prev + curr;
        prev = curr;
        curr = next;
    }
    return curr;
}
