#include <string>

bool balanced(const std::string &expr) {
    const std::string opening = "([{", closing = ")]}";
    std::string pending;
    for (char c : expr) {
        if (opening.find(c) != std::string::npos) {
            pending.push_back(closing[opening.find(c)]);
        } else if (closing.find(c) != std::string::npos) {
            if (pending.empty() || pending.back() != c) return false;
            pending.pop_back();
        }
    }
    return pending.empty();
}
