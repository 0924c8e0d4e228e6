#include <stdlib.h>

static int compare_ints(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

void sort_ints(int *a, int n)
{
    qsort(a, (size_t)n, sizeof a[0], compare_ints);
}
