#include <vector>

// Concatenate the inner vectors of nested, in order, into one flat vector
// and return it; empty inner vectors contribute nothing.
std::vector<int> flatten(const std::vector<std::vector<int>> &nested) {
    std::vector<int> flat;
    for (const auto &inner : nested) {
        for (int x : inner) {
            flat.push_back(x);
        }
    }
    return flat;
}
