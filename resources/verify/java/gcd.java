class Solution {
    /**
     * Return the greatest common divisor of two non-negative integers a and b,
     * using the Euclidean algorithm; gcd(0, 0) is 0.
     */
    public int gcd(int a, int b) {
        while (b != 0) {
            int r = a % b;
            a = b;
            b = r;
        }
        return a;
    }
}
