import java.util.HashMap;
import java.util.Map;

class Solution {
    /**
     * Count how often each whitespace-separated word occurs in the text and
     * return the counts in a map from word to number of occurrences.
     */
    public Map<String, Integer> wordCount(String text) {
        Map<String, Integer> counts = new HashMap<>();
        for (String word : text.trim().split("\\s+")) {
            if (!word.isEmpty()) {
                counts.put(word, counts.getOrDefault(word, 0) + 1);
            }
        }
        return counts;
    }
}
