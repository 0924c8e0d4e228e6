#include <stdlib.h>
#include <string.h>

void transpose(double *m, int n)
{
    double *copy = malloc(sizeof(double) * n * n);
    memcpy(copy, m, sizeof(double) * n * n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            m[j * n + i] = copy[i * n + j];
    free(copy);
}
