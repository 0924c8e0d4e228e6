class Solution {
    /**
     * Return the n-th Fibonacci number, where fib(0) is 0 and fib(1) is 1 and
     * every later number is the sum of the two before it.
     */
    public long fibonacci(int n) {
        long a = 0, b = 1;
        for (int i = 0; i < n; i++) {
            long t = a + b;
            a = b;
            b = t;
        }
        return a;
    }
}
