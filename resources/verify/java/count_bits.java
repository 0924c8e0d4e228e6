class Solution {
    /**
     * Count the bits set to one in the binary representation of the integer
     * x, clearing the lowest set bit at each step.
     */
    public int countBits(int x) {
        int count = 0;
        while (x != 0) {
            x &= x - 1;
            count++;
        }
        return count;
    }
}
