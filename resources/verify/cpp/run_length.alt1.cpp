#include <sstream>
#include <string>

std::string run_length(const std::string &s) {
    std::ostringstream os;
    for (std::size_t i = 0; i < s.size();) {
        char c = s[i];
        std::size_t count = 0;
        for (; i < s.size() && s[i] == c; ++i) ++count;
        os << c << count;
    }
    return os.str();
}
