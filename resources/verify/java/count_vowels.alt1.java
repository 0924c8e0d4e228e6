class Solution {
    public int countVowels(String text) {
        return (int) text.toLowerCase().chars().filter(c -> c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u').count();
    }
}
