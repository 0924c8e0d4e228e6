double array_mean(const double *xs, int n)
{
    double mean = 0.0;
    for (int k = 0; k < n; k++)
        mean += (xs[k] - mean) / (k + 1);
    return mean;
}
