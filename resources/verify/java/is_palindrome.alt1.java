class Solution {
    public boolean isPalindrome(String s) {
        String kept = s.replaceAll("[^A-Za-z0-9]", "").toLowerCase();
        return new StringBuilder(kept).reverse().toString().equals(kept);
    }
}
