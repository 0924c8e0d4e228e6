void caesar(char *s, int k)
{
    int shift = k % 26;
    if (shift < 0)
        shift += 26;
    for (int i = 0; s[i] != '\0'; i++) {
        char base;
        if (s[i] >= 'a' && s[i] <= 'z')
            base = 'a';
        else if (s[i] >= 'A' && s[i] <= 'Z')
            base = 'A';
        else
            continue;
        s[i] = (char)(base + (s[i] - base + shift) % 26);
    }
}
