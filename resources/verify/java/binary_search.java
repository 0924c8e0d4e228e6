class Solution {
    /**
     * Search the sorted array values for target and return its index, or -1
     * when the target does not occur in the array.
     */
    public int search(int[] values, int target) {
        int lo = 0, hi = values.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (values[mid] == target) {
                return mid;
            } else if (values[mid] < target) {
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return -1;
    }
}
