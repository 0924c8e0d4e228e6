/* Return the largest sum of a non-empty contiguous run of elements of the
   array a of length n (Kadane's algorithm, one pass). */
long max_subarray(const int *a, int n)
{
    long best = a[0], current = a[0];
    for (int i = 1; i < n; i++) {
        current = current + a[i] > a[i] ? current + a[i] : a[i];
        if (current > best)
            best = current;
    }
    return best;
}
