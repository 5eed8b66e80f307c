// A matrix kept as fixed column ranges ("parts"), and its product summed
// over the parts in one fixed order.
//
//   W: [rows][cols] = [ W_0 | W_1 | ... | W_{n-1} ], W_p: [rows][cols / n]
//   y[t] = ((W_0 x_0[t] + W_1 x_1[t]) + W_2 x_2[t]) + ...
//   x_p[t] = x[t][p * cols/n, (p + 1) * cols/n)
//
// Why: matmul() accumulates along the columns, so a product split by columns
// over tensor-parallel ranks (attention output, FFN down) would sum
// differently on one process than on several. Splitting it into the same
// parts at every rank count, each part's product computed alone (its own
// accumulation from 0, bitwise what matmul() gives for that part) and the
// parts added in index order, gives the same bits whether one process holds
// every part or each rank holds a few and the parts are gathered first.
// Cost at one process: one matmul() call (one parallel region) per part
// instead of one in all, and (n - 1) adds per output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/kernels/matmul.h"
#include "core/threadpool.h"

namespace kvforge {

struct ColumnParts {
  GgmlType type = GgmlType::F32;
  int64_t rows = 0;
  int64_t cols = 0;               // the parts' cols together (this process's share)
  std::vector<WeightView> parts;  // [n] each [rows][cols / n], cols a whole number of blocks
};

// out[p] = parts[p] x_p: out [parts][n_tokens][rows], x [n_tokens][cols].
// Uses scratch.part_x for x_p when n_tokens > 1 (the columns are strided).
void matmul_parts(const ColumnParts& w, const float* x, int64_t n_tokens, float* out,
                  ThreadPool& pool, MatmulScratch& scratch);

// y = ((in[0] + in[1]) + in[2]) + ... elementwise; in [n_parts][count].
void sum_parts(const float* in, int n_parts, size_t count, float* y);

// y = W x as above: matmul_parts into scratch.part_y, then sum_parts.
// x [n_tokens][cols], y [n_tokens][rows].
void matmul_column_parts(const ColumnParts& w, const float* x, int64_t n_tokens, float* y,
                         ThreadPool& pool, MatmulScratch& scratch);

// Bytes of scratch.activations a call with n_tokens needs (as matmul_scratch_bytes).
size_t matmul_scratch_bytes(const ColumnParts& w, int64_t n_tokens);

}  // namespace kvforge
