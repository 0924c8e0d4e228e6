static int search_range(const int *a, int lo, int hi, int key)
{
    if (lo > hi)
        return -1;
    int m = (lo + hi) / 2;
    if (a[m] == key)
        return m;
    return a[m] < key ? search_range(a, m + 1, hi, key) : search_range(a, lo, m - 1, key);
}

int binary_search(const int *a, int n, int key)
{
    return search_range(a, 0, n - 1, key);
}
