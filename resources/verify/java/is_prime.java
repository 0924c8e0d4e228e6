class Solution {
    /**
     * Decide whether the integer n is a prime number; numbers below two are
     * not prime, and only divisors up to the square root are tried.
     */
    public boolean isPrime(long n) {
        if (n < 2) {
            return false;
        }
        for (long d = 2; d * d <= n; d++) {
            if (n % d == 0) {
                return false;
            }
        }
        return true;
    }
}
