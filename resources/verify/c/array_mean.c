/* Return the arithmetic mean of the n values of the array xs, or zero when
   the array is empty, summing in double precision. */
double array_mean(const double *xs, int n)
{
    double total = 0.0;
    if (n == 0)
        return 0.0;
    for (int i = 0; i < n; i++)
        total += xs[i];
    return total / n;
}
