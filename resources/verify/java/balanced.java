import java.util.ArrayDeque;
import java.util.Deque;

class Solution {
    /**
     * Check that every bracket of the expression, round, square or curly, is
     * closed by the matching bracket in the right order.
     */
    public boolean isBalanced(String expr) {
        Deque<Character> open = new ArrayDeque<>();
        for (char c : expr.toCharArray()) {
            if (c == '(' || c == '[' || c == '{') {
                open.push(c);
            } else if (c == ')' || c == ']' || c == '}') {
                if (open.isEmpty()) {
                    return false;
                }
                char top = open.pop();
                if ((c == ')' && top != '(') || (c == ']' && top != '[') || (c == '}' && top != '{')) {
                    return false;
                }
            }
        }
        return open.isEmpty();
    }
}
