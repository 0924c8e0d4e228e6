#include <map>
#include <sstream>
#include <string>

// Count how often each whitespace-separated word occurs in the text and
// return the counts in a map ordered by word.
std::map<std::string, int> word_frequencies(const std::string &text) {
    std::map<std::string, int> counts;
    std::istringstream in(text);
    std::string word;
    while (in >> word) {
        counts[word]++;
    }
    return counts;
}
