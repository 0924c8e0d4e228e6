#include <sstream>
#include <string>
#include <vector>

// Return the words of the sentence in reverse order, joined by single
// spaces; extra white space between words is dropped.
std::string reverse_words(const std::string &sentence) {
    std::istringstream in(sentence);
    std::vector<std::string> words;
    std::string w;
    while (in >> w) words.push_back(w);
    std::string out;
    for (auto it = words.rbegin(); it != words.rend(); ++it) {
        if (!out.empty()) out += ' ';
        out += *it;
    }
    return out;
}
