#include <array>
#include <string>

bool anagrams(std::string a, std::string b) {
    std::array<int, 256> counts{};
    for (unsigned char c : a) counts[c]++;
    for (unsigned char c : b) counts[c]--;
    for (int n : counts)
        if (n != 0) return false;
    return true;
}
