// Tensor parallelism for a mixture of experts (model/tensor_split.h has the
// cut): each rank keeps its rows of every expert, and the ranks exchange
// activations so that every output is computed as on one process.
//
// Per MoE layer on N ranks, for a step of T tokens with k experts each:
//   router, top-k, weights       whole on every rank (the same picks everywhere)
//   h = act(gate x) * up x       this rank's n_ff_exp / N columns of each pair's h
//   gather h                     [T k][n_ff_exp] on every rank (T k n_ff_exp floats)
//   y = down h                   this rank's n_embd / N output rows of each pair
//   out = sum_j w_j y_j          per output row, in pick order, as one process adds
//   gather out                   [T][n_embd] (T n_embd floats)
// and the shared expert alike. Every product is one whole dot product and
// every sum runs in one process's order, so the bits equal one process's at
// any rank count (unlike column parts, this needs no change to how one
// process computes).
#pragma once

#include <cstdint>

#include "core/comm/communicator.h"
#include "core/kernels/matmul.h"
#include "model/forward_steps.h"
#include "model/model_config.h"
#include "model/moe_weights.h"
#include "model/tensor_split.h"

namespace kvforge {

// `rows` rows of m from row `first` on: a view into the same bytes.
WeightView row_range(const WeightView& m, int64_t first, int64_t rows);

// Keeps this rank's rows of every expert's matrices and biases (the whole
// model's config `c`); the router stays whole. Nothing to do on one rank.
void keep_rank_experts(MoeWeights& m, const ModelConfig& c, const TensorSplit& s);

// What a rank of a tensor-parallel MoE step exchanges through.
struct MoeRanks {
  const TensorSplit& split;
  Communicator& comm;
  TpExchange& ex;
};

// out [rows][n_ranks * cols] = every rank's `mine` [rows][cols] side by side
// (rank r's columns from r * cols): gathered, then laid out by row.
void gather_columns(const MoeRanks& r, const float* mine, int64_t rows, int64_t cols, float* out);

}  // namespace kvforge
