// Resolves a plan's WeightRef (+ layer) to the model's tensors.
#pragma once

#include <vector>

#include "engine/static_pipeline/plan.h"
#include "model/model.h"

namespace kvforge {

bool is_matrix_ref(WeightRef w);     // AttnQ/K/V/Output, FfnGate/Up/Down, Output
bool is_norm_ref(WeightRef w);       // [n_embd]: AttnNorm, FfnNorm, OutputNorm, Attn/FfnPostNorm
bool is_head_norm_ref(WeightRef w);  // [head_dim]: AttnQNorm, AttnKNorm
bool is_bias_ref(WeightRef w);       // BiasQ/K/V
bool is_per_layer_ref(WeightRef w);
const char* weight_ref_name(WeightRef w);

// A matrix a MatMul op multiplies by: one view (attn_q/k/v, ffn_gate/up,
// output), or the fixed column parts of attn_output / ffn_down, whose
// product is summed in part order as forward() sums it
// (core/kernels/column_parts.h), so static and paged logits stay bitwise equal.
struct PlanMatrix {
  const WeightView* whole = nullptr;
  const ColumnParts* parts = nullptr;
  int64_t rows() const { return whole ? whole->rows : parts->rows; }
  int64_t cols() const { return whole ? whole->cols : parts->cols; }
};
size_t matmul_scratch_bytes(const PlanMatrix& m, int64_t n_tokens);

// Throw std::invalid_argument when the reference is of the wrong kind or the
// layer is out of range.
PlanMatrix weight_matrix(const Model& model, WeightRef w, int layer);
const std::vector<float>& weight_vector(const Model& model, WeightRef w, int layer);

}  // namespace kvforge
