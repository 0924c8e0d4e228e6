void merge_sorted(const int *a, int n, const int *b, int m, int *out)
{
    int i = 0, j = 0;
    for (int k = 0; k < n + m; k++) {
        int take_a = j >= m || (i < n && a[i] <= b[j]);
        out[k] = take_a ? a[i++] : b[j++];
    }
}
