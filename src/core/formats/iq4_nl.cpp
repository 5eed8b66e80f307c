#include "core/formats/iq4_nl.h"

#include <cmath>

#include "core/formats/block_rows.h"
#include "core/formats/f16.h"
#include "core/formats/iq4_codebook.h"
#include "core/formats/quantize_checks.h"

namespace kvforge {
namespace {

constexpr int kHalf = BlockIQ4_NL::kElems / 2;
constexpr int kLevels = 16;

// The half that stores scale d, clamped to the largest finite half.
uint16_t stored_scale(float d) {
  const uint16_t h = fp32_to_fp16(d);
  return (h & 0x7fffu) >= 0x7c00u ? uint16_t((h & 0x8000u) | 0x7bffu) : h;
}

// Midpoints between neighbouring codebook levels (ascending), then +inf.
struct Midpoints {
  float at[kLevels];
};

constexpr Midpoints make_midpoints() {
  Midpoints m{};
  for (int i = 0; i + 1 < kLevels; ++i)
    m.at[i] = 0.5f * float(kIq4Codebook[i] + kIq4Codebook[i + 1]);
  m.at[kLevels - 1] = __builtin_inff();
  return m;
}

constexpr Midpoints kMidpoints = make_midpoints();

// Index of the codebook level nearest v (the lower one on a tie): the
// number of midpoints below v, by a binary search without branches (each
// step's outcome is data, which a branch would mispredict half the time).
int nearest_level(float v) {
  int i = 0;
  for (int step = 8; step > 0; step /= 2) i += step * int(v > kMidpoints.at[i + step - 1]);
  return i;
}

// Indices of the levels nearest x/d for the stored scale d (the level
// nearest 0 when d is 0); returns the block's squared error as dequantized.
double assign_levels(const float* x, float d, uint8_t* index) {
  double err = 0;
  for (int i = 0; i < BlockIQ4_NL::kElems; ++i) {
    index[i] = uint8_t(nearest_level(d == 0.0f ? 0.0f : x[i] / d));
    const double diff = double(x[i]) - double(d * float(kIq4Codebook[index[i]]));
    err += diff * diff;
  }
  return err;
}

struct Fit {
  uint16_t d = 0;  // stored scale
  uint8_t index[BlockIQ4_NL::kElems] = {};
  double err = -1;
};

// Keeps the candidate scale d0 (as stored) if it beats `best`, then the
// least-squares scale for the levels d0 chose.
void try_scale(const float* x, float d0, Fit& best) {
  Fit f;
  f.d = stored_scale(d0);
  f.err = assign_levels(x, fp16_to_fp32(f.d), f.index);
  if (best.err < 0 || f.err < best.err) best = f;
  double sum_xl = 0, sum_l2 = 0;
  for (int i = 0; i < BlockIQ4_NL::kElems; ++i) {
    const double l = kIq4Codebook[f.index[i]];
    sum_xl += double(x[i]) * l;
    sum_l2 += l * l;
  }
  Fit refit;
  refit.d = stored_scale(float(sum_xl / sum_l2));  // sum_l2 > 0: no level is 0
  refit.err = assign_levels(x, fp16_to_fp32(refit.d), refit.index);
  if (refit.err < best.err) best = refit;
}

void quantize_block(const float* x, BlockIQ4_NL& out) {
  float amax = 0, max = 0;  // the largest-magnitude element, with its sign
  for (int i = 0; i < BlockIQ4_NL::kElems; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  Fit best;
  if (amax == 0.0f) {
    best.err = assign_levels(x, 0.0f, best.index);
  } else {
    // max on the extreme levels -127 and 113, and up to 12 inside them
    // (about half the gap to the next level, which the refit then adjusts).
    for (int step = 0; step < 4; ++step) {
      try_scale(x, max / float(kIq4Codebook[0] + 4 * step), best);
      try_scale(x, max / float(kIq4Codebook[kLevels - 1] - 4 * step), best);
    }
  }
  out.d = best.d;
  for (int j = 0; j < kHalf; ++j) out.qs[j] = uint8_t(best.index[j] | best.index[j + kHalf] << 4);
}

}  // namespace

void dequantize_row_iq4_nl(const BlockIQ4_NL* src, float* dst, int64_t n) {
  for_each_block(src, dst, n, [](const BlockIQ4_NL& block, float* out) {
    const float d = fp16_to_fp32(block.d);
    for (int j = 0; j < kHalf; ++j) {
      out[j] = d * float(kIq4Codebook[block.qs[j] & 15]);
      out[j + kHalf] = d * float(kIq4Codebook[block.qs[j] >> 4]);
    }
  });
}

void quantize_row_iq4_nl(const float* src, BlockIQ4_NL* dst, int64_t n) {
  quantize_row_blocks("quantize_row_iq4_nl", src, dst, n, quantize_block);
}

}  // namespace kvforge
