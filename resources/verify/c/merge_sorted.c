/* Merge the sorted arrays a (length n) and b (length m) into out, which
   has room for n + m values, keeping the result in ascending order. */
void merge_sorted(const int *a, int n, const int *b, int m, int *out)
{
    int i = 0, j = 0, k = 0;
    while (i < n && j < m) {
        if (a[i] <= b[j])
            out[k++] = a[i++];
        else
            out[k++] = b[j++];
    }
    while (i < n)
        out[k++] = a[i++];
    while (j < m)
        out[k++] = b[j++];
}
