#include "core/ops/gated_delta_chunked.h"

#include "core/cpu_features.h"
#include "core/ops/gated_delta_chunked_impl.h"

namespace kvforge {

void gated_delta_rule_chunked_scalar(float* state, const float* q, const float* k, const float* v,
                                     const float* decay_log, const float* beta, int n_tokens, int d,
                                     float* out, GatedDeltaChunkScratch& scratch) {
  delta_rule_chunked_all(state, q, k, v, decay_log, beta, n_tokens, d, out, scratch);
}

void gated_delta_rule_chunked(float* state, const float* q, const float* k, const float* v,
                              const float* decay_log, const float* beta, int n_tokens, int d,
                              float* out, GatedDeltaChunkScratch& scratch) {
  switch (simd_level()) {
    case SimdLevel::Avx512:
      return gated_delta_rule_chunked_avx512(state, q, k, v, decay_log, beta, n_tokens, d, out,
                                             scratch);
    case SimdLevel::Avx2:
      return gated_delta_rule_chunked_avx2(state, q, k, v, decay_log, beta, n_tokens, d, out,
                                           scratch);
    case SimdLevel::Scalar:
      break;
  }
  gated_delta_rule_chunked_scalar(state, q, k, v, decay_log, beta, n_tokens, d, out, scratch);
}

}  // namespace kvforge
