#include <ctype.h>

int count_words(const char *text)
{
    int count = 0;
    for (int i = 0; text[i] != '\0'; i++) {
        int starts = !isspace((unsigned char)text[i]) && (i == 0 || isspace((unsigned char)text[i - 1]));
        count += starts;
    }
    return count;
}
