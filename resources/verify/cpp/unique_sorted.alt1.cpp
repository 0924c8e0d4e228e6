#include <set>
#include <vector>

std::vector<int> unique_sorted(std::vector<int> values) {
    std::set<int> distinct(values.begin(), values.end());
    return std::vector<int>(distinct.begin(), distinct.end());
}
