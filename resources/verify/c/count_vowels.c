#include <string.h>

/* Count how many characters of the string text are vowels, in upper or
   lower case (the letters a, e, i, o and u only). */
int count_vowels(const char *text)
{
    int count = 0;
    for (const char *p = text; *p != '\0'; p++) {
        if (strchr("aeiouAEIOU", *p) != NULL)
            count++;
    }
    return count;
}
