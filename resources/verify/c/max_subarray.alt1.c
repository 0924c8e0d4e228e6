long max_subarray(const int *a, int n)
{
    long best = a[0];
    for (int start = 0; start < n; start++) {
        long sum = 0;
        for (int end = start; end < n; end++) {
            sum += a[end];
            if (sum > best)
                best = sum;
        }
    }
    return best;
}
