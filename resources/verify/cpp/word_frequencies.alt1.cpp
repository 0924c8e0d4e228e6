#include <cctype>
#include <map>
#include <string>

std::map<std::string, int> word_frequencies(const std::string &text) {
    std::map<std::string, int> result;
    std::string current;
    for (char c : text) {
        if (std::isspace(static_cast<unsigned char>(c))) {
            if (!current.empty()) {
                ++result[current];
                current.clear();
            }
        } else {
            current += c;
        }
    }
    if (!current.empty())
        ++result[current];
    return result;
}
