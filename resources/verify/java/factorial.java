import java.math.BigInteger;

class Solution {
    /**
     * Compute the factorial of n exactly, the product of all positive integers
     * up to and including n; the factorial of zero is one.
     */
    public BigInteger factorial(int n) {
        BigInteger result = BigInteger.ONE;
        for (int i = 2; i <= n; i++) {
            result = result.multiply(BigInteger.valueOf(i));
        }
        return result;
    }
}
