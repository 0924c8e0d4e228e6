#include <numeric>
#include <vector>

std::vector<double> moving_average(const std::vector<double> &xs, std::size_t k) {
    std::vector<double> result;
    if (k == 0) return result;
    for (std::size_t start = 0; start + k <= xs.size(); ++start) {
        double total = std::accumulate(xs.begin() + start, xs.begin() + start + k, 0.0);
        result.push_back(total / k);
    }
    return result;
}
