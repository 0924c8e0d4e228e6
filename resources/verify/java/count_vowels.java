class Solution {
    /**
     * Count how many characters of the string text are vowels, in upper or
     * lower case (the letters a, e, i, o and u only).
     */
    public int countVowels(String text) {
        int count = 0;
        for (int i = 0; i < text.length(); i++) {
            if ("aeiouAEIOU".indexOf(text.charAt(i)) >= 0) {
                count++;
            }
        }
        return count;
    }
}
