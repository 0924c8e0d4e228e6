import java.util.HashMap;
import java.util.Map;

class Solution {
    private final Map<Integer, Long> memo = new HashMap<>();

    public long fibonacci(int n) {
        if (n < 2) {
            return n;
        }
        Long known = memo.get(n);
        if (known != null) {
            return known;
        }
        long value = fibonacci(n - 1) + fibonacci(n - 2);
        memo.put(n, value);
        return value;
    }
}
