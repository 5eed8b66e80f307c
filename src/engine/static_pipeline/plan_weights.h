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

// Throw std::invalid_argument when the reference is of the wrong kind or the
// layer is out of range.
const WeightView& weight_matrix(const Model& model, WeightRef w, int layer);
const std::vector<float>& weight_vector(const Model& model, WeightRef w, int layer);

}  // namespace kvforge
