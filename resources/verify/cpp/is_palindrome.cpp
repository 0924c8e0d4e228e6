#include <cctype>
#include <string>

// Return true when the string reads the same forwards and backwards when
// only its letters and digits are kept and case is ignored.
bool is_palindrome(const std::string &s) {
    std::string kept;
    for (char c : s) {
        if (std::isalnum(static_cast<unsigned char>(c)))
            kept += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return std::string(kept.rbegin(), kept.rend()) == kept;
}
