#include <vector>

using Matrix = std::vector<std::vector<double>>;

Matrix matrix_multiply(const Matrix &a, const Matrix &b) {
    Matrix out(a.size(), std::vector<double>(b[0].size()));
    for (std::size_t row = 0; row < a.size(); ++row) {
        for (std::size_t k = 0; k < b.size(); ++k) {
            double factor = a[row][k];
            for (std::size_t col = 0; col < b[0].size(); ++col) out[row][col] += factor * b[k][col];
        }
    }
    return out;
}
