// What a rank of a tensor-parallel step exchanges through, and the two
// helpers the row-split layers (mixtures of experts, linear attention) use:
// views of a matrix's rows, and a gather of every rank's columns.
#pragma once

#include <cstdint>

#include "core/comm/communicator.h"
#include "core/kernels/matmul.h"
#include "model/forward_steps.h"
#include "model/tensor_split.h"

namespace kvforge {

struct TpRanks {
  const TensorSplit& split;
  Communicator& comm;
  TpExchange& ex;
};

// `rows` rows of m from row `first` on: a view into the same bytes.
WeightView row_range(const WeightView& m, int64_t first, int64_t rows);

// out [rows][n_ranks * cols] = every rank's `mine` [rows][cols] side by side
// (rank r's columns from r * cols): gathered, then laid out by row.
void gather_columns(const TpRanks& r, const float* mine, int64_t rows, int64_t cols, float* out);

}  // namespace kvforge
