import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

class Solution {
    public List<List<String>> groupAnagrams(String[] words) {
        Map<String, List<String>> byKey = new TreeMap<>();
        for (String word : words) {
            int[] counts = new int[26];
            for (char c : word.toCharArray()) {
                counts[c - 'a']++;
            }
            StringBuilder key = new StringBuilder();
            for (int i = 0; i < 26; i++) {
                for (int r = 0; r < counts[i]; r++) {
                    key.append((char) ('a' + i));
                }
            }
            byKey.computeIfAbsent(key.toString(), k -> new ArrayList<>()).add(word);
        }
        return new ArrayList<>(byKey.values());
    }
}
