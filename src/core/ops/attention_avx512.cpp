// The attention tile step at AVX-512 (attention_simd_tile.h at 16 floats per
// register): masked loads and stores for partial chunks, record tails read
// with masks, a fold level as blend + two-source permute. Up to 3 heads share
// each K chunk (8 · 3 accumulators + 3 queries + 1 chunk ≤ 28 registers);
// V blocks of 4 heads × 2 chunks, so a single head still keeps 4 FMA chains
// in flight.
//
// Compiled with AVX-512 flags: internal linkage only, no std templates, no
// inline functions shared with other TUs (see core/cpu_features.h).
// GCC 12's AVX-512 headers trip -W(maybe-)uninitialized inside their own
// _mm256_undefined_* helpers when reductions are inlined (GCC PR105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <immintrin.h>
#include <string.h>

#include "core/ops/attention_simd_tile.h"
#include "core/ops/avx512_exp.h"

namespace kvforge::attention_detail {
namespace {

float half_at(const uint8_t* p) {
  uint16_t h;
  memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

struct Avx512 {
  static constexpr int kW = 16;
  static constexpr int kScoreHeads = 3;
  static constexpr int kValueHeads = 4;
  static constexpr int kValueChunks = 2;
  using F = __m512;
  using Mask = __mmask16;

  static Mask lanes_below(int n) { return n >= kW ? Mask(0xffff) : Mask((1u << n) - 1u); }
  static F zero() { return _mm512_setzero_ps(); }
  static F set1(float x) { return _mm512_set1_ps(x); }
  static F load(const float* p) { return _mm512_load_ps(p); }
  static F loadu(const float* p) { return _mm512_loadu_ps(p); }
  static F load_masked(Mask m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float* p, F v) { _mm512_store_ps(p, v); }
  static void storeu(float* p, F v) { _mm512_storeu_ps(p, v); }
  static void store_masked(float* p, Mask m, F v) { _mm512_mask_storeu_ps(p, m, v); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F exp(F x) { return avx512_exp(x); }
  static float reduce_add(F v) { return _mm512_reduce_add_ps(v); }
  static float reduce_max(F v) { return _mm512_reduce_max_ps(v); }
  static F max_where(F mx, Mask m, F x) { return _mm512_mask_max_ps(mx, m, mx, x); }
  static F zero_unless(Mask m, F x) { return _mm512_maskz_mov_ps(m, x); }

  // One level of the score fold: lanes where kFromB is set come from b, the
  // others from a, and each lane adds the lane 1, 2, 4 or 8 (levels 0-3)
  // away, so the result holds a's sums in the lanes a keeps and b's in the
  // others. After level 3, lane t sums all of p[t].
  static constexpr Mask kFromB[4] = {0xAAAA, 0xCCCC, 0xF0F0, 0xFF00};

  // Lane l of the partner gather: lane l ^ span of b where kFromB has l, else of a.
  template <int kLevel>
  static __m512i partner_index() {
    constexpr int kSpan = 1 << kLevel;
    alignas(64) int idx[kW];
    for (int l = 0; l < kW; ++l) idx[l] = (l ^ kSpan) | ((kFromB[kLevel] >> l) & 1 ? kW : 0);
    return _mm512_load_si512(idx);
  }

  template <int kLevel>
  [[gnu::always_inline]] static inline F fold(F a, F b) {
    const F kept = _mm512_mask_blend_ps(kFromB[kLevel], a, b);
    return _mm512_add_ps(kept, _mm512_permutex2var_ps(a, partner_index<kLevel>(), b));
  }

  // Chunk readers of one record per format: full(i) is values [i, i + 16),
  // part(i, m) the lanes of m among them, the others zero. Each is one
  // pointer (and int8 its scale), so a group's 16 readers fit a small array.
  struct F32Record {
    const float* x = nullptr;
    F32Record() = default;
    explicit F32Record(const uint8_t* rec) : x(reinterpret_cast<const float*>(rec)) {}
    F full(int i) const { return _mm512_loadu_ps(x + i); }
    F part(int i, Mask m) const { return _mm512_maskz_loadu_ps(m, x + i); }
  };

  struct F16Record {
    const uint8_t* x = nullptr;
    F16Record() = default;
    explicit F16Record(const uint8_t* rec) : x(rec) {}
    F full(int i) const {
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 2 * i)));
    }
    F part(int i, Mask m) const { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + 2 * i)); }
  };

  struct Bf16Record {
    const uint8_t* x = nullptr;
    Bf16Record() = default;
    explicit Bf16Record(const uint8_t* rec) : x(rec) {}
    static F widen(__m256i h) {
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    F full(int i) const {
      return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 2 * i)));
    }
    F part(int i, Mask m) const { return widen(_mm256_maskz_loadu_epi16(m, x + 2 * i)); }
  };

  struct Int8Record {
    const uint8_t* x = nullptr;
    float d = 0;  // the record's scale
    Int8Record() = default;
    explicit Int8Record(const uint8_t* rec) : x(rec + 2), d(half_at(rec)) {}
    F full(int i) const {
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
      return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), _mm512_set1_ps(d));
    }
    F part(int i, Mask m) const {
      const __m128i q = _mm_maskz_loadu_epi8(m, x + i);
      return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), _mm512_set1_ps(d));
    }
  };

  template <typename Record>
  static F tail(const Record& rec, int i, int n) {
    return rec.part(i, lanes_below(n));
  }

  // q4: groups of 32 values in 20 bytes (kv_q4.h); low nibbles are values
  // 0-15, high nibbles 16-31, each x = n·d + m.
  static void decode_rows_q4(const uint8_t* const* recs, int m, int hd, float* buf) {
    constexpr int kChunkFloats = kW * kW;
    const __m512i low4 = _mm512_set1_epi32(0x0f);
    for (int t = 0; t < m; ++t) {
      const uint8_t* rec = recs[t];
      float* dst = buf + t * kW;
      for (int i = 0; i < hd; i += 2 * kW, rec += 20, dst += 2 * kChunkFloats) {
        const F d = _mm512_set1_ps(half_at(rec));
        const F offset = _mm512_set1_ps(half_at(rec + 2));
        const __m512i w =
            _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 4)));
        const F lo = _mm512_cvtepi32_ps(_mm512_and_si512(w, low4));
        const F hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(w, 4));
        _mm512_store_ps(dst, _mm512_add_ps(_mm512_mul_ps(lo, d), offset));
        _mm512_store_ps(dst + kChunkFloats, _mm512_add_ps(_mm512_mul_ps(hi, d), offset));
      }
    }
  }
};

}  // namespace

void attend_tile_avx512(const TileJob& job) { attend_tile<Avx512>(job); }

}  // namespace kvforge::attention_detail
