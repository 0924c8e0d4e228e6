#include <unordered_map>
#include <utility>
#include <vector>

// Find two different positions i < j of nums whose values add up to target
// and return them as a pair, or (-1, -1) when there are none.
std::pair<int, int> two_sum(const std::vector<int> &nums, int target) {
    std::unordered_map<int, int> seen;
    for (int i = 0; i < static_cast<int>(nums.size()); ++i) {
        auto found = seen.find(target - nums[i]);
        if (found != seen.end()) return {found->second, i};
        seen.emplace(nums[i], i);
    }
    return {-1, -1};
}
