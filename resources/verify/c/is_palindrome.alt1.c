#include <ctype.h>

static int mirror(const char *left, const char *right)
{
    if (left >= right)
        return 1;
    if (tolower((unsigned char)*left) != tolower((unsigned char)*right))
        return 0;
    return mirror(left + 1, right - 1);
}

int is_palindrome(const char *s)
{
    const char *last = s;
    if (*s == '\0')
        return 1;
    while (last[1])
        last++;
    return mirror(s, last);
}
