class Solution {
    /**
     * Return the sum of the decimal digits of the integer n; the sign of a
     * negative number is ignored, so digitSum(-123) is 6.
     */
    public int digitSum(long n) {
        n = Math.abs(n);
        int sum = 0;
        while (n > 0) {
            sum += n % 10;
            n /= 10;
        }
        return sum;
    }
}
