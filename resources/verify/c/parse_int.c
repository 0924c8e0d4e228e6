#include <ctype.h>

/* Parse an optionally signed decimal integer at the start of the string s,
   skipping leading white space, and return its value (0 if none). */
long parse_int(const char *s)
{
    long value = 0;
    int sign = 1;
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '-' || *s == '+') {
        if (*s == '-')
            sign = -1;
        s++;
    }
    while (isdigit((unsigned char)*s)) {
        value = value * 10 + (*s - '0');
        s++;
    }
    return sign * value;
}
