// The oracle: a plain scalar single-sequence forward pass in the manner of
// llama2.c's run.c, written for clarity rather than speed. Weights are
// dequantized to f32 once; one token per call; K/V kept in f32; dot products
// accumulated in double. Covers every architecture feature the engine has
// (RoPE scalings, Q/K norms, post norms, GELU, soft-capping, sliding
// windows, mixtures of experts), each written out from its definition. Shares no code with the
// engine's forward pass except dequantize_row (itself checked against the formats' definitions).
#pragma once

#include <cstdint>
#include <vector>

#include "model/model.h"

namespace kvforge::testing {

class ReferenceForward {
 public:
  ReferenceForward(const Model& model, int max_seq_len);
  // Logits [n_vocab] after feeding `token` at position `pos` (positions 0, 1, 2, ... in order).
  std::vector<float> forward(int32_t token, int32_t pos);

 private:
  struct Layer {
    std::vector<float> attn_norm, wq, wk, wv, bq, bk, bv, wo, ffn_norm, w1, w2, w3;
    std::vector<float> q_norm, k_norm, attn_post_norm, ffn_post_norm;  // empty when unused
    // Mixture of experts: router (n_expert, n_embd), its bias, and per expert
    // gate/up (n_ff_exp, n_embd) and down (n_embd, n_ff_exp).
    std::vector<float> router, router_bias;
    std::vector<std::vector<float>> exp_gate, exp_up, exp_down;
    // gpt-oss: attention output bias (n_embd), sinks (n_head), and the
    // experts' biases (n_expert, n_ff_exp / n_embd); empty when unused.
    std::vector<float> bo, sinks, exp_gate_bias, exp_up_bias, exp_down_bias;
  };
  // The mixture-of-experts FFN of one token's normed input, from its definition.
  std::vector<float> moe(const Layer& w, const std::vector<float>& x) const;
  // RoPE on one head of `layer` at `pos`, in double from the config's formula.
  void rope(float* head, int layer, int32_t pos) const;
  const ModelConfig& c_;
  int max_seq_len_;
  std::vector<float> token_embd_;  // (n_vocab, n_embd)
  std::vector<Layer> layers_;
  std::vector<float> output_norm_;   // (n_embd)
  std::vector<float> output_;        // (n_vocab, n_embd)
  std::vector<float> rope_factors_;  // (rope_dim / 2) or empty
  std::vector<float> key_cache_;     // (layer, seq_len, kv_dim)
  std::vector<float> value_cache_;   // (layer, seq_len, kv_dim)
};

}  // namespace kvforge::testing
