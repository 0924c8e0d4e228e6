class Solution {
    public long maxSubArray(int[] nums) {
        long best = Long.MIN_VALUE;
        for (int start = 0; start < nums.length; start++) {
            long sum = 0;
            for (int end = start; end < nums.length; end++) {
                sum += nums[end];
                best = Math.max(best, sum);
            }
        }
        return best;
    }
}
