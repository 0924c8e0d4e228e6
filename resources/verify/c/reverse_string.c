#include <string.h>

/* Reverse the characters of the null-terminated string s in place and
   return s itself, so that calls can be chained. */
char *reverse_string(char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n / 2; i++) {
        char tmp = s[i];
        s[i] = s[n - 1 - i];
        s[n - 1 - i] = tmp;
    }
    return s;
}
