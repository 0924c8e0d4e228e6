long long fibonacci(int n)
{
    long long table[93];
    table[0] = 0;
    table[1] = 1;
    for (int k = 2; k <= n; k++)
        table[k] = table[k - 1] + table[k - 2];
    return table[n];
}
