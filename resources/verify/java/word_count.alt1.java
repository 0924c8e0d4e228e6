import java.util.Arrays;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

class Solution {
    public Map<String, Integer> wordCount(String text) {
        return Arrays.stream(text.split("\\s+"))
                .filter(w -> !w.isEmpty())
                .collect(Collectors.toMap(Function.identity(), w -> 1, Integer::sum));
    }
}
