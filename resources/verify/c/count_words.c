#include <ctype.h>

/* Count the words of the string text, a word being a maximal run of
   characters that are not white space (spaces, tabs or newlines). */
int count_words(const char *text)
{
    int words = 0, inside = 0;
    for (; *text; text++) {
        if (isspace((unsigned char)*text)) {
            inside = 0;
        } else if (!inside) {
            inside = 1;
            words++;
        }
    }
    return words;
}
