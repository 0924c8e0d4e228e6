#include <stdio.h>

/* Write the run-length encoding of the string s into out, each run as its
   character followed by its length, as in a3b1c2; return the length written. */
int run_length(const char *s, char *out)
{
    int len = 0;
    while (*s) {
        char c = *s;
        int run = 0;
        while (*s == c) {
            run++;
            s++;
        }
        len += sprintf(out + len, "%c%d", c, run);
    }
    out[len] = '\0';
    return len;
}
