#include <ctype.h>

/* Shift every letter of the string s by k places in the alphabet, in place,
   wrapping around from z to a and keeping case; other characters stay. */
void caesar(char *s, int k)
{
    k = ((k % 26) + 26) % 26;
    for (; *s; s++) {
        if (islower((unsigned char)*s))
            *s = (char)('a' + (*s - 'a' + k) % 26);
        else if (isupper((unsigned char)*s))
            *s = (char)('A' + (*s - 'A' + k) % 26);
    }
}
