#include <utility>
#include <vector>

std::pair<int, int> two_sum(const std::vector<int> &nums, int target) {
    int n = static_cast<int>(nums.size());
    for (int j = 1; j < n; ++j)
        for (int i = 0; i < j; ++i)
            if (nums[i] + nums[j] == target) return std::make_pair(i, j);
    return std::make_pair(-1, -1);
}
