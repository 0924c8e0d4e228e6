int binary_search(const int *values, int n, int target)
{
    int lo = 0, len = n;
    while (len > 0) {
        int half = len / 2;
        if (values[lo + half] < target) {
            lo += half + 1;
            len -= half + 1;
        } else {
            len = half;
        }
    }
    return lo < n && values[lo] == target ? lo : -1;
}
