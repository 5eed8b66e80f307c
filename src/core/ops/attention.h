// Scaled dot-product attention of the query heads of one GQA group over a KV
// cache that may be split into spans (one span for a contiguous cache, one per
// block for a paged cache), with an online softmax over tiles of positions so
// no [n_keys] score row is ever materialised and each KV record is read once
// per group, not once per query head.
//
// Quantized records (core/formats/kv_*.h) are decoded in place, a tile at a
// time: the SIMD paths read f32/f16/bf16/int8 records straight into registers
// (q4 and odd head sizes through a small L1 buffer), the scalar path one
// record at a time into a scratch row; no full-precision copy of the cache
// exists. The AVX2 / AVX-512 paths (attention_avx2.cpp,
// attention_avx512.cpp) are chosen at run time by simd_level(); the scalar
// path (attention_scalar.cpp) is the reference they are tested against.
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

// Positions scored before one softmax rescale. Tiles start at multiples of it.
inline constexpr int kAttentionTile = 64;
// Query heads handled in one pass over the records; larger groups take several passes.
inline constexpr int kAttentionHeadsPerPass = 8;
// attend_queries: query heads of all its queries together (n_q * n_queries) at most.
inline constexpr int kAttentionMaxStackedHeads = 32;

// Floats of scratch attend_heads / attend_one_head need (any group size):
// [heads per pass][head_dim] accumulators, one decoded row, [heads per pass][tile]
// scores, running max and sum per head, and slack to align the pieces.
inline size_t attention_scratch_floats(int head_dim) {
  return size_t(kAttentionHeadsPerPass + 1) * size_t(head_dim) +
         size_t(kAttentionHeadsPerPass) * (kAttentionTile + 2) + 64;
}

// Floats of scratch attend_queries needs (and enough for attend_heads): the
// same pieces for kAttentionMaxStackedHeads heads, plus their gathered queries.
inline size_t attention_queries_scratch_floats(int head_dim) {
  return size_t(2 * kAttentionMaxStackedHeads + 1) * size_t(head_dim) +
         size_t(kAttentionMaxStackedHeads) * (kAttentionTile + 2) + 64;
}

// For each of the n_q query heads j (all sharing kv head `kv_head`):
//   out[j][head_dim] = softmax(scale * q[j]·K[0..n_keys)) · V[0..n_keys)
// q and out are [n_q][head_dim], heads back to back. Positions are taken from
// the spans in order; n_keys must be ≤ their total and ≥ 1. Each head's result
// is the same bits whether it is computed alone or in a group.
//
// `mask` (optional, [n_keys], nonzero = attend) is how a fixed-shape program
// sees a static cache: n_keys is the whole KV length of the plan and the mask
// marks the valid slots. Masked positions are never read into the sums (a NaN
// left in an unused slot cannot leak), tiles the mask fully excludes are
// skipped, and tile boundaries stay at multiples of kAttentionTile from
// position 0, so a mask that keeps exactly [0, n) gives the same bits as
// n_keys = n without a mask, and splitting the cache into spans of any size
// gives the same bits as one span. At least one position must be valid.
// `softcap` > 0 soft-caps the scores as Scoring does (gemma2).
void attend_heads(const float* q, int n_q, const KvSpan* spans, size_t n_spans, int32_t n_keys,
                  int kv_head, int head_dim, KvFormat format, float scale, float* out,
                  float* scratch, const uint8_t* mask = nullptr, float softcap = 0.0f);

// Positions [begin, end) of its sequence that one query attends: [0, pos + 1)
// under full attention, (pos − W, pos] under a sliding window W.
struct KeyRange {
  int32_t begin = 0;
  int32_t end = 0;
};

// The records attend_queries reads: spans in position order, the first
// record being position `first` of the sequence.
struct KvView {
  const KvSpan* spans = nullptr;
  size_t n_spans = 0;
  int32_t first = 0;
};

// How a query's dot product with a key becomes its score:
//   s = scale · q·k, then s → softcap · tanh(s / softcap) when softcap > 0 (gemma2).
// With sinks (gpt-oss), query head j's softmax has one more term in its
// denominator, exp(sinks[j]), that weighs no value:
//   out[j] = Σ_t exp(s_t) V_t / (Σ_t exp(s_t) + exp(sinks[j]))
// (the sink is a logit as it is, not scaled or capped).
struct Scoring {
  float scale = 1.0f;
  float softcap = 0.0f;
  const float* sinks = nullptr;  // [n_q] one per query head of the call, or null: none
};

// Prefill and windows: n_queries query tokens of one sequence, query i being
// the n_q heads at q + i * q_stride (all sharing kv head `kv_head`) over its
// positions keys[i], written to out + i * out_stride. Begins and ends must be
// ascending, each range non-empty and inside what `kv` holds (more than
// kAttentionMaxStackedHeads heads in all are handled one query at a time).
// Each query's result is the same bits as attend_heads for it alone (with a
// range starting at 0): tiles are cut at multiples of kAttentionTile from
// position 0 whatever the range, the view's first position or the split
// into spans, and each tile holds exactly the query's positions; only the
// walk over the records of the tiles the queries share (and their decoding)
// happens once for all of them.
void attend_queries(const float* q, size_t q_stride, int n_q, const KeyRange* keys, int n_queries,
                    const KvView& kv, int kv_head, int head_dim, KvFormat format, Scoring scoring,
                    float* out, size_t out_stride, float* scratch);

// attend_heads for a single query head.
inline void attend_one_head(const float* q, const KvSpan* spans, size_t n_spans, int32_t n_keys,
                            int kv_head, int head_dim, KvFormat format, float scale, float* out,
                            float* scratch, const uint8_t* mask = nullptr, float softcap = 0.0f) {
  attend_heads(q, 1, spans, n_spans, n_keys, kv_head, head_dim, format, scale, out, scratch, mask,
               softcap);
}

}  // namespace kvforge
