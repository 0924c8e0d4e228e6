int count_bits(unsigned x)
{
    int n = 0;
    for (; x != 0; x >>= 1)
        n += x & 1u;
    return n;
}
