/* Transpose the square matrix m of size n by n in place, stored row after
   row, by swapping each element above the diagonal with its mirror. */
void transpose(double *m, int n)
{
    for (int row = 0; row < n; row++) {
        for (int col = row + 1; col < n; col++) {
            double t = m[row * n + col];
            m[row * n + col] = m[col * n + row];
            m[col * n + row] = t;
        }
    }
}
