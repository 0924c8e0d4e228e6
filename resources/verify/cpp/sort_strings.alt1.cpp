#include <map>
#include <set>
#include <string>
#include <vector>

std::vector<std::string> sort_strings(std::vector<std::string> items) {
    std::map<std::size_t, std::multiset<std::string>> by_length;
    for (const auto &s : items) by_length[s.size()].insert(s);
    std::vector<std::string> out;
    for (const auto &entry : by_length)
        for (const auto &s : entry.second) out.push_back(s);
    return out;
}
