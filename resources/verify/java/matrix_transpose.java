class Solution {
    /**
     * Return the transpose of the rectangular matrix m, whose entry at row j
     * and column i is the entry of m at row i and column j.
     */
    public int[][] transpose(int[][] m) {
        int rows = m.length, cols = m[0].length;
        int[][] t = new int[cols][rows];
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) {
                t[j][i] = m[i][j];
            }
        }
        return t;
    }
}
