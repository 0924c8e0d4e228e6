class Solution {
    /**
     * Return the largest sum of a non-empty contiguous run of elements of the
     * array nums (Kadane's algorithm, one pass).
     */
    public long maxSubArray(int[] nums) {
        long best = nums[0], current = nums[0];
        for (int i = 1; i < nums.length; i++) {
            current = Math.max(nums[i], current + nums[i]);
            best = Math.max(best, current);
        }
        return best;
    }
}
