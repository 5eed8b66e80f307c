// Gemma 4's per-layer embeddings (llama.cpp's gemma4 graph: Gemma 3n's
// design). Every token gets, for each layer l, an input of P =
// n_embd_per_layer values that mixes its own per-layer token embedding with a
// projection of its main (scaled) embedding x:
//   inputs[t][l] = (rms_norm(model_proj_l · x_t / sqrt(n_embd)) * proj_norm
//                   + per_layer_token_embd[token_t][l] * sqrt(P)) / sqrt(2)
// and after layer l's FFN residual the layer adds a gated projection of it
// and scales its output:
//   x_t += rms_norm(proj_l · (gelu(gate_l · x_t) * inputs[t][l])) * post_norm_l
//   x_t *= out_scale_l
// Shapes: x [rows][n_embd], inputs [rows][n_layer][P].
#pragma once

#include <cstdint>
#include <span>

#include "model/block_steps.h"

namespace kvforge {

// The widest per-layer input kvforge reads (Gemma 4 E2B/E4B: 256).
inline constexpr int kMaxPerLayerEmbd = 4096;

// inputs = every layer's per-layer input of the tokens, from x their scaled embeddings.
void per_layer_inputs(const StepEnv& env, std::span<const int32_t> tokens, const float* x,
                      float* inputs);

// x = the layer's output after its per-layer input (where the model has
// them) and its output scale. gate [rows][P] and proj [rows][n_embd] are scratch.
void per_layer_block(const StepEnv& env, int layer, const float* inputs, int64_t rows, float* x,
                     float* gate, float* proj);

// Bytes of matmul scratch per_layer_inputs (layer -1) or the layer's
// per_layer_block needs over `rows` rows; 0 without per-layer embeddings.
size_t per_layer_scratch_bytes(const Model& model, int layer, int64_t rows);

}  // namespace kvforge
