#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

std::string reverse_words(const std::string &sentence) {
    std::vector<std::string> parts;
    std::stringstream ss(sentence);
    for (std::string token; ss >> token;) parts.push_back(token);
    std::reverse(parts.begin(), parts.end());
    std::ostringstream joined;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i > 0) joined << ' ';
        joined << parts[i];
    }
    return joined.str();
}
