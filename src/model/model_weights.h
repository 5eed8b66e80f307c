// The weights of a LLaMA-family model as views into the memory-mapped GGUF
// file (matrices stay in their storage format) plus small f32 copies of the
// norm and bias vectors, and copies of the matrices regrouped for this
// machine's kernels (regroup_for_kernels).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/gguf/gguf_file.h"
#include "core/huge_page_buffer.h"
#include "core/kernels/column_parts.h"
#include "core/kernels/matmul.h"
#include "model/gated_delta_net.h"
#include "model/model_config.h"
#include "model/moe_weights.h"
#include "model/tensor_split.h"

namespace kvforge {

// A fused attn_qkv matrix ([q_dim + 2 kv_dim rows][n_embd]) is seen as its
// three row ranges, and phi3's fused gate|up ffn_up ([2 n_ff rows]) as its
// two halves: views into the same bytes, no copy.
//
// Shapes are this rank's share (model/tensor_split.h; the whole model on one
// process): q_dim = its n_head * head_dim, kv_dim = its n_kv_head *
// head_dim, n_ff its FFN rows. attn_output and ffn_down are kept as their
// fixed column parts (core/kernels/column_parts.h), copied out of the file.
struct LayerWeights {
  std::vector<float> attn_norm;  // [n_embd]
  // [q_dim rows][n_embd]; with attn_gate (qwen35) [2 q_dim rows]: each head's query then its gate
  WeightView attn_q;
  WeightView attn_k;                  // [kv_dim rows][n_embd]
  WeightView attn_v;                  // [kv_dim rows][n_embd]
  std::vector<float> bias_q;          // [q_dim] or empty
  std::vector<float> bias_k;          // [kv_dim] or empty
  std::vector<float> bias_v;          // [kv_dim] or empty
  std::vector<float> attn_q_norm;     // [head_dim] or empty (qk_norm)
  std::vector<float> attn_k_norm;     // [head_dim] or empty (qk_norm)
  std::vector<float> attn_v_norm;     // [head_dim] ones or empty (gemma4: V normed, no weight)
  ColumnParts attn_output;            // [n_embd rows][q_dim], this rank's attn parts
  std::vector<float> bias_o;          // [n_embd] or empty (attn_output_bias)
  std::vector<float> attn_sinks;      // [n_head] or empty (attn_sinks): each head's sink logit
  std::vector<float> attn_post_norm;  // [n_embd] or empty (post_norms)
  std::vector<float> ffn_norm;        // [n_embd]
  WeightView ffn_gate;                // [n_ff rows][n_embd]
  WeightView ffn_up;                  // [n_ff rows][n_embd]
  ColumnParts ffn_down;               // [n_embd rows][n_ff], this rank's ffn parts
  std::vector<float> ffn_post_norm;   // [n_embd] or empty (post_norms)
  MoeWeights moe;  // mixture-of-experts models (config.moe): their FFN, ffn_gate/up/down empty
  // A recurrent layer's (ModelConfig::recurrent) in place of the attention weights above.
  LinearAttentionWeights linear;
  // Gemma 4 (model/per_layer_embedding.h): the per-layer embedding's gate
  // [n_embd_per_layer rows][n_embd] (inp_gate), projection [n_embd rows]
  // [n_embd_per_layer] (proj) and norm [n_embd] (post_norm), empty without;
  // the layer's output is multiplied by out_scale (layer_output_scale, else 1).
  WeightView ple_gate;
  WeightView ple_proj;
  std::vector<float> ple_post_norm;
  float out_scale = 1.0f;
};

struct ModelWeights {
  TensorSplit split;      // this rank's share of the model
  WeightView token_embd;  // [n_vocab rows][n_embd], whole on every rank
  std::vector<LayerWeights> layers;
  // Gemma 4's per-layer token embeddings [n_vocab rows][n_layer * n_embd_per_layer],
  // their projection from the embeddings [n_layer * n_embd_per_layer rows][n_embd]
  // and its norm [n_embd_per_layer]; empty without (config.n_embd_per_layer 0).
  WeightView ple_token_embd;
  WeightView ple_model_proj;
  std::vector<float> ple_proj_norm;
  std::vector<float> output_norm;  // [n_embd]
  // [split.vocab_rows[rank] rows][n_embd] from row split.vocab_first[rank];
  // (rows of) token_embd when tied
  WeightView output;
  // RoPE frequency divisors, [rope_dim/2] each or empty: Llama 3's
  // rope_freqs, Phi-3's LongRoPE factors for long and short contexts.
  std::vector<float> rope_freqs;
  std::vector<float> rope_factors_long;
  std::vector<float> rope_factors_short;
  // Storage of the regrouped matrices, one block (moving ModelWeights keeps it in place).
  HugePageBuffer regrouped;
  // Storage of the column parts copied out of the file (released once
  // regroup_for_kernels has copied all of them again).
  HugePageBuffer column_copies;

  // Checks every tensor's presence, shape and type against `config`; throws
  // std::runtime_error naming the file, tensor, expected and actual shape/type.
  // A tensor of the file that nothing reads is an error too (naming it),
  // unless it is on the short list of tensors known not to change the output.
  // Keeps rank `rank` of `n_ranks`'s share (TensorSplit::of; throws
  // std::invalid_argument when the model cannot be split so): views of its
  // rows, copies of its column parts; the file's pages of the whole
  // attn_output / ffn_down matrices are released after the copy.
  static ModelWeights from_gguf(const gguf::GgufFile& file, const ModelConfig& config, int rank = 0,
                                int n_ranks = 1);

  // Where matmul() at the current SIMD level reads a layout faster than the
  // file's (kernels/weight_repack.h: Q4_0, Q8_0 at the AVX-512 level), copies the
  // layer and output matrices into it and points their views there. The
  // token embeddings stay as they are (rows are looked up, not multiplied);
  // a tied output gets its own copy. Calls `copied` with the source bytes
  // of each matrix copied that nothing reads any more (a tied output's are
  // the embeddings', still read), so the caller can release them. Returns
  // the bytes copied. A share of a matrix takes the layout the whole matrix
  // would (throws std::invalid_argument when its rows cannot), so that every
  // rank count computes each output row the same way.
  // `progress` hears the fraction of the bytes copied so far after each matrix.
  size_t regroup_for_kernels(const std::function<void(std::span<const uint8_t>)>& copied = {},
                             const std::function<void(double)>& progress = {});
};

}  // namespace kvforge
