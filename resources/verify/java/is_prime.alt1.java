class Solution {
    public boolean isPrime(long n) {
        if (n < 2) {
            return false;
        }
        long limit = (long) Math.sqrt((double) n);
        for (long k = 2; k <= limit + 1 && k < n; k++) {
            if (n % k == 0) {
                return false;
            }
        }
        return true;
    }
}
