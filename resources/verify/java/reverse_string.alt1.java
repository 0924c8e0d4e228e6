class Solution {
    public String reverse(String s) {
        return new StringBuilder(s).reverse().toString();
    }
}
