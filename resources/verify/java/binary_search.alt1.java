import java.util.Arrays;

class Solution {
    public int search(int[] values, int target) {
        int at = Arrays.binarySearch(values, target);
        return at >= 0 ? at : -1;
    }
}
