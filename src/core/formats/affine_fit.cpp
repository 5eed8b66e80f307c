#include "core/formats/affine_fit.h"

#include <algorithm>
#include <cmath>

#include "core/formats/f16.h"

namespace kvforge {
namespace {

constexpr int kElems = AffineBlock::kElems;
constexpr float kHalfMax = 65504.0f;

struct Params {
  float d = 0;
  float m = 0;
};

// Levels are kept as floats while fitting (exact: at most 31), so that the
// loops below vectorize.

// As the formats decode (q4_1.h): the product is exact, the sum rounds once.
double squared_error(const float* x, const float* q, float d, float m) {
  double err = 0;
  for (int i = 0; i < kElems; ++i) {
    const double diff = double(x[i]) - double(q[i] * d + m);
    err += diff * diff;
  }
  return err;
}

// The nearest level of each value under (d, m); every value on level 0 when d == 0.
void assign_nearest(const float* x, float d, float m, int max_level, float* q) {
  const float id = d == 0.0f ? 0.0f : 1.0f / d;
  const float top = float(max_level);
  auto level = [top](float t) {
    t = t > 0.0f ? t : 0.0f;  // also NaN (inf * 0, only for values near the f32 limit)
    t = t < top ? t : top;
    return float(int(t + 0.5f));
  };
  if (std::isfinite(id)) {
    for (int i = 0; i < kElems; ++i) q[i] = level((x[i] - m) * id);
  } else {  // d an f32 subnormal: 1/d overflows
    for (int i = 0; i < kElems; ++i) q[i] = level((x[i] - m) / d);
  }
}

// Least-squares (d, m) for fixed levels q; m alone (the mean) when all levels are equal.
Params refit(const float* x, const float* q) {
  float sq = 0, sqq = 0;  // exact: integers below 2^24
  double sx = 0, sqx = 0;
  for (int i = 0; i < kElems; ++i) {
    sq += q[i];
    sqq += q[i] * q[i];
    sx += x[i];
    sqx += double(q[i]) * x[i];
  }
  const double det = double(kElems) * sqq - double(sq) * sq;
  if (det <= 0) return {0.0f, float(sx / kElems)};
  const double d = (kElems * sqx - sq * sx) / det;
  return {float(d), float((sx - d * sq) / kElems)};
}

// Saturating; NaN (only from sums that overflowed f32) becomes 0.
uint16_t to_half(float v) {
  return std::isnan(v) ? uint16_t(0) : fp32_to_fp16(std::clamp(v, -kHalfMax, kHalfMax));
}

// The nearest half to v and its two finite neighbours (fewer at +-65504).
int half_neighbours(float v, uint16_t out[3]) {
  const uint16_t h = to_half(v);
  int n = 0;
  out[n++] = h;
  if ((h & 0x7fff) == 0) {  // +-0: the smallest subnormals either side
    out[n++] = 0x0001;
    out[n++] = 0x8001;
    return n;
  }
  if ((h & 0x7fff) < 0x7bff) out[n++] = uint16_t(h + 1);  // one ulp further from zero
  out[n++] = uint16_t(h - 1);                             // one ulp nearer zero (may be 0)
  return n;
}

struct Best {
  double err = INFINITY;
  uint16_t d = 0, m = 0;
  float q[kElems] = {};
};

// Tries (d, m) as stored halves with nearest levels; keeps it if it beats `best`.
void try_halves(const float* x, uint16_t hd, uint16_t hm, int max_level, Best& best) {
  const float d = fp16_to_fp32(hd), m = fp16_to_fp32(hm);
  float q[kElems];
  assign_nearest(x, d, m, max_level, q);
  const double err = squared_error(x, q, d, m);
  if (err < best.err) {
    best.err = err;
    best.d = hd;
    best.m = hm;
    std::copy(q, q + kElems, best.q);
  }
}

// Step 2 of the header: the halves around (d, m), then around the offset
// refitted for the best stored step.
void search_halves(const float* x, Params p, int max_level, Best& best) {
  uint16_t ds[3], ms[3];
  const int nd = half_neighbours(p.d, ds), nm = half_neighbours(p.m, ms);
  for (int i = 0; i < nd; ++i)
    for (int j = 0; j < nm; ++j) try_halves(x, ds[i], ms[j], max_level, best);
  const float d = fp16_to_fp32(best.d);
  double residual = 0;
  for (int i = 0; i < kElems; ++i) residual += double(x[i]) - double(best.q[i] * d);
  const int nr = half_neighbours(float(residual / kElems), ms);
  for (int j = 0; j < nr; ++j) try_halves(x, best.d, ms[j], max_level, best);
}

}  // namespace

AffineBlock fit_affine_block(const float* x, int max_level) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < kElems; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  const Params published{(hi - lo) / float(max_level), lo};
  Params fitted = published;
  if (hi > lo) {
    float q[kElems];
    assign_nearest(x, published.d, published.m, max_level, q);
    double fitted_err = squared_error(x, q, published.d, published.m);
    constexpr int kSteps = 10;  // step sizes range/(max_level +- 1), in tenths
    for (int s = -kSteps; s <= kSteps; ++s) {
      const float step = (hi - lo) / (float(max_level) + 0.1f * float(s));
      assign_nearest(x, step, lo, max_level, q);
      Params p = refit(x, q);
      assign_nearest(x, p.d, p.m, max_level, q);
      p = refit(x, q);
      assign_nearest(x, p.d, p.m, max_level, q);
      const double err = squared_error(x, q, p.d, p.m);
      if (err < fitted_err) {
        fitted_err = err;
        fitted = p;
      }
    }
  }
  Best best;
  search_halves(x, published, max_level, best);
  search_halves(x, fitted, max_level, best);
  AffineBlock out;
  out.d = best.d;
  out.m = best.m;
  for (int i = 0; i < kElems; ++i) out.q[i] = uint8_t(best.q[i]);
  return out;
}

}  // namespace kvforge
