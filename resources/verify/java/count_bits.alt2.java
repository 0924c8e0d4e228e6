class Solution {
    public int countBits(int x) {
        int n = 0;
        for (int i = 0; i < 32; i++) {
            n += (x >>> i) & 1;
        }
        return n;
    }
}
