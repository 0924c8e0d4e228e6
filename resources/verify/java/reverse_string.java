class Solution {
    /**
     * Return the characters of the string s in reverse order, so that the
     * first character of the input becomes the last one of the result.
     */
    public String reverse(String s) {
        char[] chars = s.toCharArray();
        for (int i = 0, j = chars.length - 1; i < j; i++, j--) {
            char tmp = chars[i];
            chars[i] = chars[j];
            chars[j] = tmp;
        }
        return new String(chars);
    }
}
