// The weights of one mixture-of-experts FFN layer (model/moe_ffn.h), as views
// into the memory-mapped file. GGUF stores each kind of expert matrix as one
// 3-D tensor, ne = [cols, rows, n_expert]: expert e's matrix is the e-th
// [rows][cols] slab, so each expert is a WeightView into its own bytes and a
// token reads only the slabs of the experts it was routed to.
#pragma once

#include <vector>

#include "core/kernels/matmul.h"

namespace kvforge {

struct MoeWeights {
  WeightView router;               // ffn_gate_inp: [n_expert rows][n_embd]
  std::vector<float> router_bias;  // [n_expert] or empty
  std::vector<WeightView> gate;    // [n_expert] ffn_gate_exps slabs: [n_ff_exp rows][n_embd]
  std::vector<WeightView> up;      // [n_expert] ffn_up_exps slabs: [n_ff_exp rows][n_embd]
  std::vector<WeightView> down;    // [n_expert] ffn_down_exps slabs: [n_embd rows][n_ff_exp]
  // Each expert's biases (gpt-oss), empty where the file has none.
  std::vector<float> gate_bias;  // [n_expert][n_ff_exp]
  std::vector<float> up_bias;    // [n_expert][n_ff_exp]
  std::vector<float> down_bias;  // [n_expert][n_embd]
  // The shared expert (MoeConfig::n_ff_shexp > 0), else empty views.
  WeightView shared_gate_inp;  // ffn_gate_inp_shexp: [1 row][n_embd], the sigmoid gate's logit
  WeightView shared_gate;      // ffn_gate_shexp: [n_ff_shexp rows][n_embd]
  WeightView shared_up;        // ffn_up_shexp: [n_ff_shexp rows][n_embd]
  WeightView shared_down;      // ffn_down_shexp: [n_embd rows][n_ff_shexp]
  // Each expert's output scale (ffn_down_exps.scale, Gemma 4's per_expert_scale), empty
  // where the file has none.
  std::vector<float> down_scale;  // [n_expert]
  // Gemma 4 (model/gemma4_moe.h), else empty: the router's input is
  // rms_norm(x) * router_in_scale, the experts' rms_norm(x) * pre_norm, their
  // sum normed by post_norm, the dense FFN's output by dense_post_norm.
  std::vector<float> router_in_scale;  // [n_embd] ffn_gate_inp.scale / sqrt(n_embd)
  std::vector<float> pre_norm;         // [n_embd] pre_ffw_norm_2
  std::vector<float> post_norm;        // [n_embd] post_ffw_norm_2
  std::vector<float> dense_post_norm;  // [n_embd] post_ffw_norm_1
};

// The [n][rows][cols] 3-D tensor at `data` of `type` as n WeightViews.
std::vector<WeightView> expert_slabs(GgmlType type, const void* data, int64_t n, int64_t rows,
                                     int64_t cols);

}  // namespace kvforge
