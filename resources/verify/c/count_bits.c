/* Count the bits set to one in the binary representation of the unsigned
   integer x, clearing the lowest set bit at each step. */
int count_bits(unsigned x)
{
    int count = 0;
    while (x) {
        x &= x - 1;
        count++;
    }
    return count;
}
