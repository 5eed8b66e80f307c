// Scaled dot-product attention of one query head over a KV cache that may be
// split into spans (one span for a contiguous cache, one per block for a
// paged cache), with an online softmax over tiles of positions so no
// [n_keys] score row is ever materialised and the cache is read once.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/formats/kv_format.h"

namespace kvforge {

// A run of consecutive positions of one sequence in one layer. K and V are
// head records (core/formats/kv_format.h) and may differ in format, hence
// in strides.
struct KvSpan {
  const uint8_t* k = nullptr;  // K record of (first position, kv head 0)
  const uint8_t* v = nullptr;  // V record of (first position, kv head 0)
  size_t k_pos_stride = 0;     // bytes from one position's K to the next
  size_t k_head_stride = 0;    // bytes from one kv head's K record to the next
  size_t v_pos_stride = 0;
  size_t v_head_stride = 0;
  int32_t n = 0;  // positions in the span
};

// Floats of scratch attend_one_head needs.
inline size_t attention_scratch_floats(int head_dim) { return size_t(head_dim) * 2 + 64; }

// out[head_dim] = softmax(scale * q·K[0..n_keys)) · V[0..n_keys) for kv head `kv_head`.
// Positions are taken from the spans in order; n_keys must be ≤ their total and ≥ 1.
//
// `mask` (optional, [n_keys], nonzero = attend) is how a fixed-shape program
// sees a static cache: n_keys is the whole KV length of the plan and the mask
// marks the valid slots. Masked positions are never read into the sums (a NaN
// left in an unused slot cannot leak), tiles the mask fully excludes are
// skipped, and tile boundaries stay at multiples of the tile size from
// position 0, so a mask that keeps exactly [0, n) gives the same bits as
// n_keys = n without a mask. At least one position must be valid.
void attend_one_head(const float* q, const KvSpan* spans, size_t n_spans, int32_t n_keys,
                     int kv_head, int head_dim, KvFormat format, float scale, float* out,
                     float* scratch, const uint8_t* mask = nullptr);

}  // namespace kvforge
