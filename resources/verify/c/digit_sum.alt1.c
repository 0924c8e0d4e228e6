#include <stdio.h>

int digit_sum(long n)
{
    char buf[32];
    int total = 0;
    snprintf(buf, sizeof buf, "%ld", n);
    for (char *c = buf; *c; c++)
        if (*c >= '0' && *c <= '9')
            total += *c - '0';
    return total;
}
