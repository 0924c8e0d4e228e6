char *reverse_string(char *s)
{
    char *end = s;
    while (*end)
        end++;
    char *begin = s;
    while (end > begin + 1) {
        end--;
        char c = *begin;
        *begin++ = *end;
        *end = c;
    }
    return s;
}
