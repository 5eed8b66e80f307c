// AVX-512 tile step (16 floats per register, masked tails). Records are
// decoded one at a time into the L1-resident `row` with the same arithmetic
// as kv_decode_head (so decoded values are the same bits), then dotted with /
// accumulated into every query head of the group. exp is a degree-6
// polynomial after range reduction (relative error ~2e-7), so results differ
// from the scalar reference only by float rounding.
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
#include <math.h>
#include <string.h>

#include "core/ops/attention.h"
#include "core/ops/attention_tile.h"

namespace kvforge::attention_detail {
namespace {

constexpr int kW = 16;  // floats per register

__mmask16 tail_mask(int n) { return __mmask16((1u << n) - 1u); }

float half_at(const uint8_t* p) {
  uint16_t h;
  memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Record → f32 [head_dim]; f32 records are used in place.
const float* decode(KvDtype t, const uint8_t* rec, float* row, int hd) {
  int i = 0;
  switch (t) {
    case KvDtype::F32:
      return reinterpret_cast<const float*>(rec);
    case KvDtype::F16: {
      for (; i + kW <= hd; i += kW)
        _mm512_storeu_ps(
            row + i,
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + 2 * i))));
      if (i < hd) {
        const __mmask16 m = tail_mask(hd - i);
        _mm512_mask_storeu_ps(row + i, m,
                              _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, rec + 2 * i)));
      }
      return row;
    }
    case KvDtype::BF16: {
      for (; i + kW <= hd; i += kW) {
        const __m512i w = _mm512_cvtepu16_epi32(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rec + 2 * i)));
        _mm512_storeu_ps(row + i, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
      }
      if (i < hd) {
        const __mmask16 m = tail_mask(hd - i);
        const __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, rec + 2 * i));
        _mm512_mask_storeu_ps(row + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
      }
      return row;
    }
    case KvDtype::Int8: {
      const __m512 d = _mm512_set1_ps(half_at(rec));
      const uint8_t* q = rec + 2;
      for (; i + kW <= hd; i += kW) {
        const __m512i w =
            _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + i)));
        _mm512_storeu_ps(row + i, _mm512_mul_ps(_mm512_cvtepi32_ps(w), d));
      }
      if (i < hd) {
        const __mmask16 m = tail_mask(hd - i);
        const __m512i w = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, q + i));
        _mm512_mask_storeu_ps(row + i, m, _mm512_mul_ps(_mm512_cvtepi32_ps(w), d));
      }
      return row;
    }
    case KvDtype::Q4: {
      const __m512i low4 = _mm512_set1_epi32(0x0f);
      for (; i < hd; i += 32, rec += 20) {
        const __m512 d = _mm512_set1_ps(half_at(rec));
        const __m512 m = _mm512_set1_ps(half_at(rec + 2));
        const __m512i w =
            _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 4)));
        const __m512 lo = _mm512_cvtepi32_ps(_mm512_and_si512(w, low4));
        const __m512 hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(w, 4));
        _mm512_storeu_ps(row + i, _mm512_add_ps(_mm512_mul_ps(lo, d), m));
        _mm512_storeu_ps(row + i + 16, _mm512_add_ps(_mm512_mul_ps(hi, d), m));
      }
      return row;
    }
  }
  return row;
}

float dot(const float* a, const float* b, int n) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int i = 0;
  for (; i + 2 * kW <= n; i += 2 * kW) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + kW), _mm512_loadu_ps(b + i + kW), acc1);
  }
  for (; i < n; i += kW) {
    const __mmask16 m = n - i >= kW ? __mmask16(0xffff) : tail_mask(n - i);
    acc0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

// acc[0..n) += w·v
void axpy(float* acc, float w, const float* v, int n) {
  const __m512 vw = _mm512_set1_ps(w);
  for (int i = 0; i < n; i += kW) {
    const __mmask16 m = n - i >= kW ? __mmask16(0xffff) : tail_mask(n - i);
    _mm512_mask_storeu_ps(
        acc + i, m,
        _mm512_fmadd_ps(vw, _mm512_maskz_loadu_ps(m, v + i), _mm512_maskz_loadu_ps(m, acc + i)));
  }
}

void scale(float* acc, float c, int n) {
  const __m512 vc = _mm512_set1_ps(c);
  for (int i = 0; i < n; i += kW) {
    const __mmask16 m = n - i >= kW ? __mmask16(0xffff) : tail_mask(n - i);
    _mm512_mask_storeu_ps(acc + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, acc + i), vc));
  }
}

// e^x for x ≤ 0 (scores minus their running max); x < -87 gives ~1e-38.
__m512 exp_nonpositive(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

// s[0..n) ← e^(s - max); returns Σ s.
float exp_and_sum(float* s, int n, float max) {
  const __m512 vmax = _mm512_set1_ps(max);
  __m512 sum = _mm512_setzero_ps();
  for (int i = 0; i < n; i += kW) {
    const __mmask16 m = n - i >= kW ? __mmask16(0xffff) : tail_mask(n - i);
    const __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + i), vmax));
    _mm512_mask_storeu_ps(s + i, m, e);
    sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(m, e));
  }
  return _mm512_reduce_add_ps(sum);
}

float max_of(const float* s, int n) {
  __m512 mx = _mm512_set1_ps(-INFINITY);
  for (int i = 0; i < n; i += kW) {
    const __mmask16 m = n - i >= kW ? __mmask16(0xffff) : tail_mask(n - i);
    mx = _mm512_mask_max_ps(mx, m, mx, _mm512_maskz_loadu_ps(m, s + i));
  }
  return _mm512_reduce_max_ps(mx);
}

}  // namespace

void attend_tile_avx512(const TileJob& job) {
  const int hd = job.head_dim;
  for (int t = 0; t < job.n; ++t) {
    const float* k = decode(job.format.k, job.k_rows[t], job.row, hd);
    for (int j = 0; j < job.n_q; ++j)
      job.scores[j * kAttentionTile + t] = dot(job.q + size_t(j) * hd, k, hd) * job.scale;
  }
  for (int j = 0; j < job.n_q; ++j) {
    float* s = job.scores + j * kAttentionTile;
    const float old_max = job.running_max[j];
    const float tile_max = max_of(s, job.n);
    const float new_max = old_max > tile_max ? old_max : tile_max;
    const float correction = expf(old_max - new_max);  // 0 on the first tile
    job.running_sum[j] = job.running_sum[j] * correction + exp_and_sum(s, job.n, new_max);
    job.running_max[j] = new_max;
    if (correction != 1.0f) scale(job.acc + size_t(j) * hd, correction, hd);
  }
  for (int t = 0; t < job.n; ++t) {
    const float* v = decode(job.format.v, job.v_rows[t], job.row, hd);
    for (int j = 0; j < job.n_q; ++j)
      axpy(job.acc + size_t(j) * hd, job.scores[j * kAttentionTile + t], v, hd);
  }
}

}  // namespace kvforge::attention_detail
