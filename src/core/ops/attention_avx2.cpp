// The attention tile step at AVX2 + FMA + F16C (attention_simd_tile.h at 8
// floats per register): lane masks are vectors (maskload / maskstore /
// blendv), record tails are read a value at a time, a fold level is two
// blends, an in-lane or cross-half swap and an add. Two heads share each K
// chunk; V blocks of 2 heads × 2 chunks.
//
// Compiled with AVX2 flags: internal linkage only, no std templates, no
// inline functions shared with other TUs (see core/cpu_features.h).
#include <immintrin.h>
#include <string.h>

#include "core/ops/attention_simd_tile.h"
#include "core/ops/avx2_exp.h"

namespace kvforge::attention_detail {
namespace {

float half_at(const uint8_t* p) {
  uint16_t h;
  memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

float bf16_at(const uint8_t* p) {
  uint16_t h;
  memcpy(&h, p, 2);
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

struct Avx2 {
  static constexpr int kW = 8;
  static constexpr int kScoreHeads = 2;
  static constexpr int kValueHeads = 2;
  static constexpr int kValueChunks = 2;
  using F = __m256;
  using Mask = __m256i;  // all-ones lanes

  static Mask lanes_below(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static F zero() { return _mm256_setzero_ps(); }
  static F set1(float x) { return _mm256_set1_ps(x); }
  static F load(const float* p) { return _mm256_load_ps(p); }
  static F loadu(const float* p) { return _mm256_loadu_ps(p); }
  static F load_masked(Mask m, const float* p) { return _mm256_maskload_ps(p, m); }
  static void store(float* p, F v) { _mm256_store_ps(p, v); }
  static void storeu(float* p, F v) { _mm256_storeu_ps(p, v); }
  static void store_masked(float* p, Mask m, F v) { _mm256_maskstore_ps(p, m, v); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F max(F a, F b) { return _mm256_max_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F exp(F x) { return avx2_exp(x); }

  static float reduce_add(F v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float reduce_max(F v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static F max_where(F mx, Mask m, F x) {
    return _mm256_max_ps(mx,
                         _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), x, _mm256_castsi256_ps(m)));
  }
  static F zero_unless(Mask m, F x) { return _mm256_and_ps(_mm256_castsi256_ps(m), x); }

  // One level of the score fold: lanes of kFromB come from b, the others
  // from a, and each lane adds the lane 1, 2 or 4 (levels 0-2) away, so the
  // result holds a's sums in the lanes a keeps and b's in the others. After
  // level 2, lane t sums all of p[t].
  template <int kLevel>
  [[gnu::always_inline]] static inline F fold(F a, F b) {
    constexpr int kFromB = kLevel == 0 ? 0xAA : kLevel == 1 ? 0xCC : 0xF0;
    const F kept = _mm256_blend_ps(a, b, kFromB);
    const F moved = _mm256_blend_ps(b, a, kFromB);
    F swapped;
    if constexpr (kLevel == 0) swapped = _mm256_permute_ps(moved, 0xB1);  // lanes 1 0 3 2 ...
    if constexpr (kLevel == 1) swapped = _mm256_permute_ps(moved, 0x4E);  // lanes 2 3 0 1 ...
    if constexpr (kLevel == 2) swapped = _mm256_permute2f128_ps(moved, moved, 0x01);  // halves
    return _mm256_add_ps(kept, swapped);
  }

  // Chunk readers of one record per format: full(i) is values [i, i + 8),
  // one(i) the single value i (for head sizes that are not a multiple of 8).
  struct F32Record {
    const float* x = nullptr;
    F32Record() = default;
    explicit F32Record(const uint8_t* rec) : x(reinterpret_cast<const float*>(rec)) {}
    F full(int i) const { return _mm256_loadu_ps(x + i); }
    float one(int i) const { return x[i]; }
  };

  struct F16Record {
    const uint8_t* x = nullptr;
    F16Record() = default;
    explicit F16Record(const uint8_t* rec) : x(rec) {}
    F full(int i) const {
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 2 * i)));
    }
    float one(int i) const { return half_at(x + 2 * i); }
  };

  struct Bf16Record {
    const uint8_t* x = nullptr;
    Bf16Record() = default;
    explicit Bf16Record(const uint8_t* rec) : x(rec) {}
    F full(int i) const {
      const __m256i w =
          _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 2 * i)));
      return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    }
    float one(int i) const { return bf16_at(x + 2 * i); }
  };

  struct Int8Record {
    const int8_t* x = nullptr;
    float d = 0;  // the record's scale
    Int8Record() = default;
    explicit Int8Record(const uint8_t* rec)
        : x(reinterpret_cast<const int8_t*>(rec + 2)), d(half_at(rec)) {}
    F full(int i) const {
      const __m256i w =
          _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i)));
      return _mm256_mul_ps(_mm256_cvtepi32_ps(w), _mm256_set1_ps(d));
    }
    float one(int i) const { return float(x[i]) * d; }
  };

  template <typename Record>
  static F tail(const Record& rec, int i, int n) {
    alignas(32) float values[kW] = {};
    for (int k = 0; k < n; ++k) values[k] = rec.one(i + k);
    return _mm256_load_ps(values);
  }

  // q4: groups of 32 values in 20 bytes (kv_q4.h); low nibbles are values
  // 0-15, high nibbles 16-31, each x = n·d + m.
  static void decode_rows_q4(const uint8_t* const* recs, int m, int hd, float* buf) {
    constexpr int kChunkFloats = kW * kW;
    const __m256i low4 = _mm256_set1_epi32(0x0f);
    for (int t = 0; t < m; ++t) {
      const uint8_t* rec = recs[t];
      float* dst = buf + t * kW;
      for (int i = 0; i < hd; i += 4 * kW, rec += 20, dst += 4 * kChunkFloats) {
        const F d = _mm256_set1_ps(half_at(rec));
        const F offset = _mm256_set1_ps(half_at(rec + 2));
        for (int h = 0; h < 2; ++h) {  // bytes 8h..8h+7: values 8h.. (low) and 16 + 8h.. (high)
          const __m256i w = _mm256_cvtepu8_epi32(
              _mm_loadl_epi64(reinterpret_cast<const __m128i*>(rec + 4 + 8 * h)));
          const F lo = _mm256_cvtepi32_ps(_mm256_and_si256(w, low4));
          const F hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(w, 4));
          _mm256_store_ps(dst + h * kChunkFloats, _mm256_add_ps(_mm256_mul_ps(lo, d), offset));
          _mm256_store_ps(dst + (2 + h) * kChunkFloats,
                          _mm256_add_ps(_mm256_mul_ps(hi, d), offset));
        }
      }
    }
  }
};

}  // namespace

void attend_tile_avx2(const TileJob& job) { attend_tile<Avx2>(job); }

}  // namespace kvforge::attention_detail
