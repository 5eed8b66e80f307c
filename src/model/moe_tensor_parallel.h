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

#include "model/model_config.h"
#include "model/moe_weights.h"
#include "model/tensor_split.h"
#include "model/tp_ranks.h"

namespace kvforge {

// Keeps this rank's rows of every expert's matrices and biases (the whole
// model's config `c`); the router stays whole. Nothing to do on one rank.
void keep_rank_experts(MoeWeights& m, const ModelConfig& c, const TensorSplit& s);

}  // namespace kvforge
