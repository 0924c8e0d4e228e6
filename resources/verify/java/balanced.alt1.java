class Solution {
    public boolean isBalanced(String expr) {
        StringBuilder expected = new StringBuilder();
        for (char c : expr.toCharArray()) {
            int at = "([{".indexOf(c);
            if (at >= 0) {
                expected.append(")]}".charAt(at));
            } else if (")]}".indexOf(c) >= 0) {
                int last = expected.length() - 1;
                if (last < 0 || expected.charAt(last) != c) {
                    return false;
                }
                expected.deleteCharAt(last);
            }
        }
        return expected.length() == 0;
    }
}
