// The forward pass as one sequence of steps, written once: forward()
// (model/forward.cpp) runs each step over the step's tokens, and the static
// plan compiler (engine/static_pipeline/plan_compiler.cpp) records each as
// one op with fixed shapes and pre-bound buffers, which the plan executor
// runs through the same step functions (model/block_steps.h). Only attend()
// differs between the modes.
//
// A `Steps` has, for x [rows][n_embd] the residual stream and xn its
// normalised copy:
//   embed()                        x = the tokens' embeddings, RoPE angles of their positions
//   norm(which, layer)             xn = rms_norm(x) * the layer's norm `which`
//   attention_input(layer)         q, k, v = xn's Q/K/V projections, biases, Q/K norms, RoPE
//   attend(layer)                  K/V written, attn = attention of q (full or windowed):
//                                  the paged store's block tables, or the static cache
//   attention_output(layer)        proj = output projection of attn (after its output gate)
//   linear_attention_block(layer)  proj = a recurrent layer's Gated DeltaNet (hybrid models,
//                                  model/gated_delta_net.h) over its sequences' states
//   residual_then_norm(post, layer, next, next_layer)
//                                  x += post(proj) (proj as it is without post norms),
//                                  then xn = next(x), in one pass over each token's row
//   residual(post, layer)          the same without a norm after it (the last layer)
//   ffn_block(layer)               proj = ffn_down(act(gate(xn)) * up(xn))
//   layer_tail(layer)              gemma4: x += the per-layer embedding's projection, x *=
//                                  the layer's output scale (model/per_layer_embedding.h)
//   output()                       logits of the wanted rows: final norm, output matrix,
//                                  soft-cap, gathered over tensor-parallel ranks
// Which weight each norm uses is decided here; each step's own features
// (biases, Q/K norms, window, activation) by the model's config.
#pragma once

#include <stdexcept>
#include <vector>

#include "model/model.h"

namespace kvforge {

// Which norm of a layer a step applies (the static plan records it by name).
enum class LayerNorm { Attn, AttnPost, Ffn, FfnPost };

// The norm's weight: [n_embd]; empty for a post norm the model does not have.
inline const std::vector<float>& layer_norm_weight(const Model& model, LayerNorm which, int layer) {
  const LayerWeights& w = model.weights().layers[size_t(layer)];
  const std::vector<float>* by_kind[] = {&w.attn_norm, &w.attn_post_norm, &w.ffn_norm,
                                         &w.ffn_post_norm};  // LayerNorm's order
  return *by_kind[int(which)];
}

template <class Steps>
void walk_forward(const Model& model, Steps& s) {
  const int n_layer = model.rank_config().n_layer;
  // Gemma 4 ends each layer with its per-layer embedding and output scale.
  const bool tail = model.rank_config().arch == Architecture::Gemma4;
  s.embed();
  s.norm(LayerNorm::Attn, 0);
  for (int l = 0; l < n_layer; ++l) {
    if (model.rank_config().recurrent(l))
      s.linear_attention_block(l);
    else {
      s.attention_input(l);
      s.attend(l);
      s.attention_output(l);
    }
    s.residual_then_norm(LayerNorm::AttnPost, l, LayerNorm::Ffn, l);
    s.ffn_block(l);
    // The next layer's attention norm; output() norms its own rows.
    if (l + 1 < n_layer && !tail)
      s.residual_then_norm(LayerNorm::FfnPost, l, LayerNorm::Attn, l + 1);
    else
      s.residual(LayerNorm::FfnPost, l);
    if (tail) {
      if constexpr (requires { s.layer_tail(l); })
        s.layer_tail(l);
      else
        throw std::logic_error("this layer walk cannot run gemma4's per-layer embeddings");
      if (l + 1 < n_layer) s.norm(LayerNorm::Attn, l + 1);
    }
  }
  s.output();
}

}  // namespace kvforge
