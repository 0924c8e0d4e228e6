#include <algorithm>
#include <string>
#include <vector>

// Sort the strings by length, shortest first, keeping strings of equal
// length in alphabetical order, and return the sorted copy.
std::vector<std::string> sort_strings(std::vector<std::string> items) {
    std::sort(items.begin(), items.end(), [](const std::string &a, const std::string &b) {
        if (a.size() != b.size()) return a.size() < b.size();
        return a < b;
    });
    return items;
}
