#include <stdio.h>
#include <string.h>

int run_length(const char *s, char *out)
{
    size_t n = strlen(s);
    int written = 0;
    size_t start = 0;
    for (size_t i = 1; i <= n; i++) {
        if (i == n || s[i] != s[start]) {
            written += sprintf(out + written, "%c%zu", s[start], i - start);
            start = i;
        }
    }
    out[written] = '\0';
    return written;
}
