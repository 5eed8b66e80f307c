#include "model/per_layer_embedding.h"

#include <algorithm>
#include <cmath>

#include "core/formats/row_codec.h"
#include "core/ops/activation.h"
#include "core/ops/norm.h"

namespace kvforge {

void per_layer_inputs(const StepEnv& env, std::span<const int32_t> tokens, const float* x,
                      float* inputs) {
  const ModelConfig& c = env.model.rank_config();
  const ModelWeights& w = env.model.weights();
  const int64_t rows = int64_t(tokens.size()), p = c.n_embd_per_layer;
  const int64_t all = int64_t(c.n_layer) * p;
  {
    const PhaseTimer t(env.times ? &env.times->weight_matmuls : nullptr);
    matmul(w.ple_model_proj, x, rows, inputs, env.pool, env.matmul);
  }
  const float proj_scale = 1.0f / std::sqrt(float(c.n_embd));
  const float embd_scale = std::sqrt(float(p));
  const float mix_scale = 1.0f / std::sqrt(2.0f);
  const size_t rb = row_bytes(w.ple_token_embd.type, size_t(all));
  for_rows(env.pool, rows, [&](int64_t t) {
    float* in = inputs + t * all;
    for (int64_t i = 0; i < all; ++i) in[i] *= proj_scale;
    for (int l = 0; l < c.n_layer; ++l)
      rms_norm(in + l * p, w.ple_proj_norm.data(), p, c.rms_eps, in + l * p);
    // The token's own per-layer embeddings, one layer's P values at a time
    // (P a multiple of the type's block: ModelWeights checks it).
    float own[kMaxPerLayerEmbd];
    const auto* row =
        static_cast<const uint8_t*>(w.ple_token_embd.data) + size_t(tokens[size_t(t)]) * rb;
    for (int l = 0; l < c.n_layer; ++l) {
      dequantize_row(w.ple_token_embd.type, row + row_bytes(w.ple_token_embd.type, size_t(l * p)),
                     own, p);
      float* il = in + l * p;
      for (int64_t i = 0; i < p; ++i) il[i] = (il[i] + own[i] * embd_scale) * mix_scale;
    }
  });
}

void per_layer_block(const StepEnv& env, int layer, const float* inputs, int64_t rows, float* x,
                     float* gate, float* proj) {
  const ModelConfig& c = env.model.rank_config();
  const LayerWeights& lw = env.model.weights().layers[size_t(layer)];
  const int64_t p = c.n_embd_per_layer, all = int64_t(c.n_layer) * p;
  if (p > 0) {
    {
      const PhaseTimer t(env.times ? &env.times->weight_matmuls : nullptr);
      matmul(lw.ple_gate, x, rows, gate, env.pool, env.matmul);
    }
    for_rows(env.pool, rows, [&](int64_t t) {
      geglu(gate + t * p, inputs + t * all + layer * p, p, gate + t * p);
    });
    {
      const PhaseTimer t(env.times ? &env.times->weight_matmuls : nullptr);
      matmul(lw.ple_proj, gate, rows, proj, env.pool, env.matmul);
    }
  }
  for_rows(env.pool, rows, [&](int64_t t) {
    float* xt = x + t * c.n_embd;
    float* pt = proj + t * c.n_embd;
    if (p > 0) {
      rms_norm(pt, lw.ple_post_norm.data(), c.n_embd, c.rms_eps, pt);
      for (int i = 0; i < c.n_embd; ++i) xt[i] += pt[i];
    }
    if (lw.out_scale != 1.0f)
      for (int i = 0; i < c.n_embd; ++i) xt[i] *= lw.out_scale;
  });
}

size_t per_layer_scratch_bytes(const Model& model, int layer, int64_t rows) {
  if (model.rank_config().n_embd_per_layer == 0) return 0;
  if (layer < 0) return matmul_scratch_bytes(model.weights().ple_model_proj, rows);
  const LayerWeights& lw = model.weights().layers[size_t(layer)];
  return std::max(matmul_scratch_bytes(lw.ple_gate, rows), matmul_scratch_bytes(lw.ple_proj, rows));
}

}  // namespace kvforge
