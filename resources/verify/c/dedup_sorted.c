/* Remove the repeated values of the sorted array a of length n in place,
   keeping one copy of each, and return the new length. */
int dedup_sorted(int *a, int n)
{
    if (n == 0)
        return 0;
    int write = 1;
    for (int read = 1; read < n; read++) {
        if (a[read] != a[write - 1]) {
            a[write] = a[read];
            write++;
        }
    }
    return write;
}
