#include <algorithm>
#include <vector>

// Return the distinct values of the vector in ascending order, each value
// once, leaving the argument unchanged.
std::vector<int> unique_sorted(std::vector<int> values) {
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    return values;
}
