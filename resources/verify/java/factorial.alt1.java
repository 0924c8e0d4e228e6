import java.math.BigInteger;

class Solution {
    public BigInteger factorial(int n) {
        return n <= 1 ? BigInteger.ONE : BigInteger.valueOf(n).multiply(factorial(n - 1));
    }
}
