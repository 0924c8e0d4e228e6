#include <vector>

std::vector<int> flatten(const std::vector<std::vector<int>> &nested) {
    std::size_t total = 0;
    for (const auto &v : nested) total += v.size();
    std::vector<int> out;
    out.reserve(total);
    for (const auto &v : nested) out.insert(out.end(), v.begin(), v.end());
    return out;
}
