#include <ctype.h>

int count_vowels(const char *text)
{
    int n = 0;
    for (int i = 0; text[i]; i++) {
        switch (tolower((unsigned char)text[i])) {
        case 'a':
        case 'e':
        case 'i':
        case 'o':
        case 'u':
            n++;
            break;
        default:
            break;
        }
    }
    return n;
}
