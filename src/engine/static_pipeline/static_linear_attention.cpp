#include "engine/static_pipeline/static_linear_attention.h"

#include <algorithm>

#include "model/tp_ranks.h"

namespace kvforge {

StaticLinearAttention::StaticLinearAttention(const ModelConfig& config, int32_t rows)
    : xn_(size_t(rows) * size_t(config.n_embd)),
      proj_(size_t(rows) * size_t(config.n_embd)),
      rows_(size_t(rows)),
      positions_(size_t(rows)),
      seq_of_row_(size_t(rows)),
      seqs_(size_t(rows)) {
  gdn_.reserve(config, rows);
}

void StaticLinearAttention::run(const StepEnv& env, int layer, const float* xn,
                                std::span<const int32_t> positions, std::span<const int32_t> slots,
                                std::span<const uint8_t> valid, StaticKvCache& cache, float* proj) {
  const ModelConfig& c = env.model.rank_config();
  const size_t d = size_t(c.n_embd);
  size_t n = 0, n_seqs = 0;
  for (size_t t = 0; t < valid.size(); ++t) {
    if (!valid[t]) continue;
    const auto seqs_end = seqs_.begin() + ptrdiff_t(n_seqs);
    const auto seq = std::find(seqs_.begin(), seqs_end, slots[t]);
    if (seq == seqs_end) seqs_[n_seqs++] = slots[t];
    rows_[n] = int32_t(t);
    positions_[n] = positions[t];
    seq_of_row_[n] = int32_t(seq - seqs_.begin());
    std::copy_n(xn + t * d, d, xn_.data() + n * d);
    ++n;
  }
  std::fill_n(proj, valid.size() * d, 0.0f);
  if (n == 0) return;
  const LinearAttentionStep step{xn_.data(), int64_t(n), std::span(positions_.data(), n),
                                 std::span(seq_of_row_.data(), n), std::span(seqs_.data(), n_seqs)};
  // Every rank runs the same rows (lockstep), so each reaches the same gathers.
  const TensorSplit& split = env.model.split();
  const TpRanks ranks{split, env.comm, env.tp};
  gated_delta_net_block(c, env.model.weights().layers[size_t(layer)].linear, layer, step, cache,
                        gdn_, env.pool, env.matmul, proj_.data(),
                        split.n_ranks > 1 ? &ranks : nullptr);
  for (size_t i = 0; i < n; ++i) std::copy_n(proj_.data() + i * d, d, proj + size_t(rows_[i]) * d);
}

}  // namespace kvforge
