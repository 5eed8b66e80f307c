// AVX2 + FMA + F16C tile step (8 floats per register, scalar tails). Same
// structure as attention_avx512.cpp: records decoded one at a time into the
// L1-resident `row` with the arithmetic of kv_decode_head, then dotted with /
// accumulated into every query head of the group; exp is a degree-6
// polynomial after range reduction (relative error ~2e-7).
//
// Compiled with AVX2 flags: internal linkage only, no std templates, no
// inline functions shared with other TUs (see core/cpu_features.h).
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "core/ops/attention.h"
#include "core/ops/attention_tile.h"

namespace kvforge::attention_detail {
namespace {

constexpr int kW = 8;  // floats per register

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

__m256i load8_u8_as_i32(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

// Record → f32 [head_dim]; f32 records are used in place.
const float* decode(KvDtype t, const uint8_t* rec, float* row, int hd) {
  int i = 0;
  switch (t) {
    case KvDtype::F32:
      return reinterpret_cast<const float*>(rec);
    case KvDtype::F16:
      for (; i + kW <= hd; i += kW)
        _mm256_storeu_ps(
            row + i,
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 2 * i))));
      for (; i < hd; ++i) row[i] = half_at(rec + 2 * i);
      return row;
    case KvDtype::BF16:
      for (; i + kW <= hd; i += kW) {
        const __m256i w =
            _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + 2 * i)));
        _mm256_storeu_ps(row + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
      }
      for (; i < hd; ++i) row[i] = bf16_at(rec + 2 * i);
      return row;
    case KvDtype::Int8: {
      const float d = half_at(rec);
      const __m256 vd = _mm256_set1_ps(d);
      const int8_t* q = reinterpret_cast<const int8_t*>(rec + 2);
      for (; i + kW <= hd; i += kW) {
        const __m256i w =
            _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + i)));
        _mm256_storeu_ps(row + i, _mm256_mul_ps(_mm256_cvtepi32_ps(w), vd));
      }
      for (; i < hd; ++i) row[i] = float(q[i]) * d;
      return row;
    }
    case KvDtype::Q4: {
      const __m256i low4 = _mm256_set1_epi32(0x0f);
      for (; i < hd; i += 32, rec += 20) {
        const __m256 d = _mm256_set1_ps(half_at(rec));
        const __m256 m = _mm256_set1_ps(half_at(rec + 2));
        for (int h = 0; h < 16; h += 8) {
          const __m256i w = load8_u8_as_i32(rec + 4 + h);
          const __m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(w, low4));
          const __m256 hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(w, 4));
          _mm256_storeu_ps(row + i + h, _mm256_add_ps(_mm256_mul_ps(lo, d), m));
          _mm256_storeu_ps(row + i + 16 + h, _mm256_add_ps(_mm256_mul_ps(hi, d), m));
        }
      }
      return row;
    }
  }
  return row;
}

float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

float dot(const float* a, const float* b, int n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int i = 0;
  for (; i + 2 * kW <= n; i += 2 * kW) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + kW), _mm256_loadu_ps(b + i + kW), acc1);
  }
  for (; i + kW <= n; i += kW)
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  float sum = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void axpy(float* acc, float w, const float* v, int n) {
  const __m256 vw = _mm256_set1_ps(w);
  int i = 0;
  for (; i + kW <= n; i += kW)
    _mm256_storeu_ps(acc + i,
                     _mm256_fmadd_ps(vw, _mm256_loadu_ps(v + i), _mm256_loadu_ps(acc + i)));
  for (; i < n; ++i) acc[i] += w * v[i];
}

void scale(float* acc, float c, int n) {
  const __m256 vc = _mm256_set1_ps(c);
  int i = 0;
  for (; i + kW <= n; i += kW)
    _mm256_storeu_ps(acc + i, _mm256_mul_ps(_mm256_loadu_ps(acc + i), vc));
  for (; i < n; ++i) acc[i] *= c;
}

// e^x for x ≤ 0 (scores minus their running max); x < -87 gives ~1e-38.
__m256 exp_nonpositive(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 720);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // 2^n with n in [-126, 0]: build the exponent bits directly.
  const __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

// s[0..n) ← e^(s - max); returns Σ s. The tail goes through the same
// polynomial (padded lanes are discarded) so every lane's value is the same
// function of its input.
float exp_and_sum(float* s, int n, float max) {
  const __m256 vmax = _mm256_set1_ps(max);
  __m256 sum = _mm256_setzero_ps();
  int i = 0;
  for (; i + kW <= n; i += kW) {
    const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(s + i), vmax));
    _mm256_storeu_ps(s + i, e);
    sum = _mm256_add_ps(sum, e);
  }
  if (i < n) {
    float pad[kW];
    for (int k = 0; k < kW; ++k) pad[k] = i + k < n ? s[i + k] : max;
    const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(pad), vmax));
    _mm256_storeu_ps(pad, e);
    for (int k = 0; i + k < n; ++k) s[i + k] = pad[k];
    float tail = 0;
    for (int k = 0; i + k < n; ++k) tail += pad[k];
    return hsum(sum) + tail;
  }
  return hsum(sum);
}

float max_of(const float* s, int n) {
  __m256 mx = _mm256_set1_ps(-INFINITY);
  int i = 0;
  for (; i + kW <= n; i += kW) mx = _mm256_max_ps(mx, _mm256_loadu_ps(s + i));
  float m = hmax(mx);
  for (; i < n; ++i) m = s[i] > m ? s[i] : m;
  return m;
}

}  // namespace

void attend_tile_avx2(const TileJob& job) {
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
