import java.util.stream.IntStream;

class Solution {
    public int[][] transpose(int[][] m) {
        return IntStream.range(0, m[0].length)
                .mapToObj(c -> IntStream.range(0, m.length).map(r -> m[r][c]).toArray())
                .toArray(int[][]::new);
    }
}
