#include <vector>

// Search the sorted vector values for target and return its index, or -1
// when the target does not occur in the vector.
int binary_search(const std::vector<int> &values, int target) {
    int lo = 0, hi = static_cast<int>(values.size()) - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (values[mid] == target) return mid;
        if (values[mid] < target)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}
