#include <vector>

using Matrix = std::vector<std::vector<double>>;

// Multiply the matrices a (n by m) and b (m by p) and return the n by p
// product, each entry the dot product of a row of a and a column of b.
Matrix matrix_multiply(const Matrix &a, const Matrix &b) {
    std::size_t n = a.size(), m = b.size(), p = b[0].size();
    Matrix c(n, std::vector<double>(p, 0.0));
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < p; ++j)
            for (std::size_t k = 0; k < m; ++k)
                c[i][j] += a[i][k] * b[k][j];
    return c;
}
