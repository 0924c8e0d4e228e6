#include <bitset>
#include <climits>

int count_bits(unsigned x) {
    return static_cast<int>(std::bitset<sizeof(unsigned) * CHAR_BIT>(x).count());
}
