/* Search the sorted array values of length n for target and return its
   index, or -1 when the target does not occur in the array. */
int binary_search(const int *values, int n, int target)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (values[mid] == target)
            return mid;
        if (values[mid] < target)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}
