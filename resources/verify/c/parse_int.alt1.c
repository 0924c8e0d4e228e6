#include <stdlib.h>

long parse_int(const char *s)
{
    return strtol(s, NULL, 10);
}
