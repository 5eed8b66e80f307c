// The chunked delta rule (gated_delta_chunked.h) compiled for avx512: the
// loops of gated_delta_chunked_impl.h vectorized with its registers and FMA.
#include "core/ops/gated_delta_chunked_impl.h"

namespace kvforge {

void gated_delta_rule_chunked_avx512(float* state, const float* q, const float* k, const float* v,
                                     const float* decay_log, const float* beta, int n_tokens, int d,
                                     float* out, GatedDeltaChunkScratch& scratch) {
  delta_rule_chunked_all(state, q, k, v, decay_log, beta, n_tokens, d, out, scratch);
}

}  // namespace kvforge
