import java.util.ArrayList;
import java.util.List;

class Solution {
    /**
     * Return the numbers from 1 to n as strings, with multiples of three
     * replaced by Fizz, multiples of five by Buzz and of both by FizzBuzz.
     */
    public List<String> fizzBuzz(int n) {
        List<String> out = new ArrayList<>();
        for (int i = 1; i <= n; i++) {
            if (i % 15 == 0) {
                out.add("FizzBuzz");
            } else if (i % 3 == 0) {
                out.add("Fizz");
            } else if (i % 5 == 0) {
                out.add("Buzz");
            } else {
                out.add(String.valueOf(i));
            }
        }
        return out;
    }
}
