#include <algorithm>
#include <string>

// Decide whether the two words are anagrams of each other, that is whether
// one is a rearrangement of the letters of the other.
bool anagrams(std::string a, std::string b) {
    if (a.size() != b.size()) return false;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    return a == b;
}
