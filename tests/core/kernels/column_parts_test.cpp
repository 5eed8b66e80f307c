// Column parts (core/kernels/column_parts.h): each part's product is what
// matmul() gives for that part alone, and the parts are added in index
// order, so the result is the same bits however the parts are grouped
// (one process, or a few per rank gathered first).
#include "core/kernels/column_parts.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/formats/row_codec.h"
#include "core/kernels/weight_repack.h"

namespace kvforge {
namespace {

struct Matrix {
  std::vector<uint8_t> bytes;  // [rows][cols] in `type`
  WeightView view;
};

Matrix random_matrix(GgmlType type, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> f(size_t(rows * cols));
  for (float& x : f) x = dist(rng);
  Matrix m;
  const size_t rb = row_bytes(type, size_t(cols));
  m.bytes.resize(rb * size_t(rows));
  for (int64_t r = 0; r < rows; ++r)
    quantize_row(type, f.data() + r * cols, m.bytes.data() + size_t(r) * rb, cols);
  m.view = WeightView{type, m.bytes.data(), rows, cols};
  return m;
}

// Columns [first, first + n) of m as a matrix of their own.
Matrix columns(const Matrix& m, int64_t first, int64_t n) {
  const GgmlType t = m.view.type;
  const size_t rb = row_bytes(t, size_t(m.view.cols)), part_rb = row_bytes(t, size_t(n));
  Matrix out;
  out.bytes.resize(part_rb * size_t(m.view.rows));
  for (int64_t r = 0; r < m.view.rows; ++r)
    std::memcpy(out.bytes.data() + size_t(r) * part_rb,
                m.bytes.data() + size_t(r) * rb + row_bytes(t, size_t(first)), part_rb);
  out.view = WeightView{t, out.bytes.data(), m.view.rows, n};
  return out;
}

class ColumnPartsTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(ColumnPartsTest, PartsAddInOrderAndAnyGroupingGivesTheSameBits) {
  const GgmlType type = GetParam();
  const int64_t rows = 48, cols = 256, n_parts = 4, pc = cols / n_parts;
  const Matrix whole = random_matrix(type, rows, cols, 7);
  std::vector<Matrix> parts;
  ColumnParts all{type, rows, cols, {}};
  for (int64_t p = 0; p < n_parts; ++p) {
    parts.push_back(columns(whole, p * pc, pc));
    // In the layout the kernels want here (Tiles16 for Q8_0 at AVX-512), as loading does.
    Matrix& m = parts.back();
    const WeightLayout layout =
        regrouping_preferred() ? regrouped_layout(type, rows, pc) : WeightLayout::Native;
    if (layout != WeightLayout::Native) {
      std::vector<uint8_t> regrouped(m.bytes.size());
      regroup_rows(layout, m.bytes.data(), rows, pc, regrouped.data());
      m.bytes = std::move(regrouped);
      m.view = WeightView{type, m.bytes.data(), rows, pc, layout};
    }
    all.parts.push_back(m.view);
  }
  ThreadPool pool(2);
  MatmulScratch scratch;
  for (int64_t n_tokens : {1, 3}) {
    std::vector<float> x(size_t(n_tokens * cols));
    std::mt19937 rng(3);
    std::normal_distribution<float> dist;
    for (float& v : x) v = dist(rng);
    std::vector<float> y(size_t(n_tokens * rows));
    matmul_column_parts(all, x.data(), n_tokens, y.data(), pool, scratch);

    // By hand: each part on its columns of x, added in part order.
    std::vector<float> want(y.size(), 0.0f), part_y(y.size()), xp(size_t(n_tokens * pc));
    for (int64_t p = 0; p < n_parts; ++p) {
      for (int64_t t = 0; t < n_tokens; ++t)
        std::memcpy(xp.data() + t * pc, x.data() + t * cols + p * pc, sizeof(float) * pc);
      matmul(parts[size_t(p)].view, xp.data(), n_tokens, part_y.data(), pool, scratch);
      for (size_t i = 0; i < y.size(); ++i) want[i] = p == 0 ? part_y[i] : want[i] + part_y[i];
    }
    EXPECT_EQ(0, std::memcmp(y.data(), want.data(), sizeof(float) * y.size()));

    // Two "ranks" of two parts each, their products gathered, then summed.
    std::vector<float> gathered(size_t(n_parts) * y.size());
    for (int rank = 0; rank < 2; ++rank) {
      ColumnParts mine{
          type, rows, 2 * pc, {all.parts[size_t(2 * rank)], all.parts[size_t(2 * rank + 1)]}};
      std::vector<float> x_mine(size_t(n_tokens * 2 * pc));
      for (int64_t t = 0; t < n_tokens; ++t)
        std::memcpy(x_mine.data() + t * 2 * pc, x.data() + t * cols + rank * 2 * pc,
                    sizeof(float) * 2 * pc);
      matmul_parts(mine, x_mine.data(), n_tokens, gathered.data() + size_t(2 * rank) * y.size(),
                   pool, scratch);
    }
    std::vector<float> summed(y.size());
    sum_parts(gathered.data(), int(n_parts), y.size(), summed.data());
    EXPECT_EQ(0, std::memcmp(y.data(), summed.data(), sizeof(float) * y.size()));

    // And close to the product of the whole matrix (a different summation order).
    std::vector<float> direct(y.size());
    matmul(whole.view, x.data(), n_tokens, direct.data(), pool, scratch);
    for (size_t i = 0; i < y.size(); ++i)
      EXPECT_NEAR(y[i], direct[i], 1e-3f * (1.0f + std::abs(direct[i])));
  }
}

INSTANTIATE_TEST_SUITE_P(Types, ColumnPartsTest,
                         ::testing::Values(GgmlType::F32, GgmlType::F16, GgmlType::Q8_0),
                         [](const auto& param_info) {
                           return std::string(type_name(param_info.param));
                         });

}  // namespace
}  // namespace kvforge
