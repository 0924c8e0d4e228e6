#include <string>

std::string to_upper(std::string s) {
    for (auto &c : s) {
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    }
    return s;
}
