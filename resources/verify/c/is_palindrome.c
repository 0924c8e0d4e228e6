#include <ctype.h>
#include <string.h>

/* Return 1 when the string s reads the same forwards and backwards,
   ignoring the case of letters, and 0 otherwise. */
int is_palindrome(const char *s)
{
    size_t i = 0, j = strlen(s);
    while (j > i + 1) {
        if (tolower((unsigned char)s[i]) != tolower((unsigned char)s[j - 1]))
            return 0;
        i++;
        j--;
    }
    return 1;
}
