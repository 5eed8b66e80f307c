#include "model/gemma4_moe.h"

#include "core/ops/norm.h"

namespace kvforge {

void gemma4_moe_ffn(const StepEnv& env, int layer, const float* x, const float* xn, int64_t rows,
                    float* gate, float* up, MoeScratch& s, float* proj) {
  const ModelConfig& c = env.model.rank_config();
  const MoeWeights& w = env.model.weights().layers[size_t(layer)].moe;
  const int64_t d = c.n_embd;
  s.reserve(c, int(rows));
  dense_ffn(env, layer, xn, rows, gate, up, proj);
  for_rows(env.pool, rows, [&](int64_t t) {
    rms_norm(proj + t * d, w.dense_post_norm.data(), d, c.rms_eps, proj + t * d);
    rms_norm(x + t * d, w.pre_norm.data(), d, c.rms_eps, s.branch_in.data() + t * d);
    rms_norm(x + t * d, w.router_in_scale.data(), d, c.rms_eps, s.router_in.data() + t * d);
  });
  {
    const PhaseTimer timer(env.times ? &env.times->weight_matmuls : nullptr);
    moe_ffn(c, w, s.branch_in.data(), rows, s.branch_out.data(), s, env.pool, env.matmul, nullptr,
            s.router_in.data());
  }
  for_rows(env.pool, rows, [&](int64_t t) {
    float* o = s.branch_out.data() + t * d;
    rms_norm(o, w.post_norm.data(), d, c.rms_eps, o);
    for (int64_t i = 0; i < d; ++i) proj[t * d + i] += o[i];
  });
}

}  // namespace kvforge
