import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

class Solution {
    /**
     * Group the words that are anagrams of each other and return the groups,
     * ordered by their sorted letters, each group in input order.
     */
    public List<List<String>> groupAnagrams(String[] words) {
        Map<String, List<String>> groups = new TreeMap<>();
        for (String w : words) {
            char[] letters = w.toCharArray();
            Arrays.sort(letters);
            groups.computeIfAbsent(new String(letters), k -> new ArrayList<>()).add(w);
        }
        return new ArrayList<>(groups.values());
    }
}
