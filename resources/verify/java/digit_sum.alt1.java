class Solution {
    public int digitSum(long n) {
        int total = 0;
        for (char c : Long.toString(n).toCharArray()) {
            if (Character.isDigit(c)) {
                total += c - '0';
            }
        }
        return total;
    }
}
