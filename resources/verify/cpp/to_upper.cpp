#include <algorithm>
#include <cctype>
#include <string>

// Return a copy of the string with every lower-case letter turned into the
// matching upper-case letter; other characters are copied unchanged.
std::string to_upper(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return s;
}
