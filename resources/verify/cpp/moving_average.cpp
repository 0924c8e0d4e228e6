#include <vector>

// Return the averages of every window of k consecutive values of xs, in
// order; the result has xs.size() - k + 1 entries when k fits.
std::vector<double> moving_average(const std::vector<double> &xs, std::size_t k) {
    std::vector<double> out;
    if (k == 0 || k > xs.size()) return out;
    double sum = 0.0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        sum += xs[i];
        if (i >= k) sum -= xs[i - k];
        if (i + 1 >= k) out.push_back(sum / k);
    }
    return out;
}
