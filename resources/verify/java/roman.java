class Solution {
    /**
     * Convert the positive integer n, at most 3999, to a Roman numeral written
     * with the subtractive forms such as IV, IX, XL and CM.
     */
    public String toRoman(int n) {
        int[] values = {1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1};
        String[] symbols = {"M", "CM", "D", "CD", "C", "XC", "L", "XL", "X", "IX", "V", "IV", "I"};
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < values.length; i++) {
            while (n >= values[i]) {
                n -= values[i];
                out.append(symbols[i]);
            }
        }
        return out.toString();
    }
}
