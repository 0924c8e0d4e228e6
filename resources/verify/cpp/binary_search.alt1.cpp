#include <algorithm>
#include <vector>

int binary_search(const std::vector<int> &values, int target) {
    auto it = std::lower_bound(values.begin(), values.end(), target);
    if (it == values.end() || *it != target) return -1;
    return static_cast<int>(it - values.begin());
}
