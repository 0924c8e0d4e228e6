#include <string>

// Encode the string with run-length encoding, each run written as its
// character followed by the length of the run, as in a3b1c2.
std::string run_length(const std::string &s) {
    std::string out;
    std::size_t i = 0;
    while (i < s.size()) {
        std::size_t j = i;
        while (j < s.size() && s[j] == s[i]) ++j;
        out += s[i];
        out += std::to_string(j - i);
        i = j;
    }
    return out;
}
