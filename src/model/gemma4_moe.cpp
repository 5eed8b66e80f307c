#include "model/gemma4_moe.h"

#include "core/ops/norm.h"
#include "model/tp_ranks.h"

namespace kvforge {

int64_t gemma4_moe_ffn(const StepEnv& env, int layer, const float* x, const float* xn, int64_t rows,
                       float* gate, float* up, MoeScratch& s, float* proj, const uint8_t* valid) {
  const ModelConfig& c = env.model.rank_config();
  const MoeWeights& w = env.model.weights().layers[size_t(layer)].moe;
  const int64_t d = c.n_embd;
  s.reserve(c, int(rows));
  dense_ffn(env, layer, xn, rows, gate, up, proj);
  int64_t n = 0;  // the experts' rows, in order: s.branch_rows[i] is x's row of branch row i
  for (int64_t t = 0; t < rows; ++t)
    if (valid == nullptr || valid[t]) s.branch_rows[size_t(n++)] = int32_t(t);
  for_rows(env.pool, rows, [&](int64_t t) {
    rms_norm(proj + t * d, w.dense_post_norm.data(), d, c.rms_eps, proj + t * d);
  });
  for_rows(env.pool, n, [&](int64_t i) {
    const float* xt = x + int64_t(s.branch_rows[size_t(i)]) * d;
    rms_norm(xt, w.pre_norm.data(), d, c.rms_eps, s.branch_in.data() + i * d);
    rms_norm(xt, w.router_in_scale.data(), d, c.rms_eps, s.router_in.data() + i * d);
  });
  if (n == 0) return 0;  // every rank has the same rows: all skip or all run
  {
    const PhaseTimer timer(env.times ? &env.times->weight_matmuls : nullptr);
    const TpRanks ranks{env.model.split(), env.comm, env.tp};
    moe_ffn(c, w, s.branch_in.data(), n, s.branch_out.data(), s, env.pool, env.matmul,
            env.model.split().n_ranks > 1 ? &ranks : nullptr, s.router_in.data());
  }
  for_rows(env.pool, n, [&](int64_t i) {
    float* o = s.branch_out.data() + i * d;
    float* p = proj + int64_t(s.branch_rows[size_t(i)]) * d;
    rms_norm(o, w.post_norm.data(), d, c.rms_eps, o);
    for (int64_t j = 0; j < d; ++j) p[j] += o[j];
  });
  return n;
}

}  // namespace kvforge
