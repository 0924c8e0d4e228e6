int dedup_sorted(int *a, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && a[i] == a[i - 1])
            continue;
        a[k++] = a[i];
    }
    return k;
}
