class Solution {
    public int countBits(int x) {
        return Integer.bitCount(x);
    }
}
