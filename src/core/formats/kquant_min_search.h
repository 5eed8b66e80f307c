// The quantizer half shared by Q4_K and Q5_K: both store a super-block of 256
// as 8 sub-blocks of 32, x ~= (d * sc[j]) * q - (dmin * m[j]), with the same
// 12-byte packing of the 6-bit sc[j], m[j] (layout in q4_k.h) and two half
// super-scales. They differ only in the level range (q <= 15 or q <= 31) and
// in how the levels are packed into bytes, which each format does itself.
//
// The search, per sub-block: candidate step sizes around (max - min) /
// max_level are tried, each level assignment refitted by weighted least
// squares for (scale, min) (weights |x| + rms, favouring large values), the
// best kept; the 8 scales and mins are then quantized to 6 bits under
// d = max scale / 63, dmin = max min / 63, trying both 6-bit neighbours of
// each, with the levels recomputed against the stored values.
//
// Q2_K (16-value sub-blocks, 4-bit scales and mins, its own super-scale
// refit) uses the sub-block fit and encoding below on their own.
#pragma once

#include <cstdint>

namespace kvforge {

struct KQuantMinBlock {
  uint16_t d = 0;         // half super-scale of the scales
  uint16_t dmin = 0;      // half super-scale of the mins
  uint8_t scales[12]{};   // packed as in q4_k.h
  uint8_t levels[256]{};  // level of element e, in [0, max_level]
};

// x: 256 finite values; max_level: 15 (Q4_K) or 31 (Q5_K).
void search_kquant_min_block(const float* x, int max_level, KQuantMinBlock& out);

// x ~= scale * q - min with q in [0, max_level]; min >= 0 (the formats subtract it).
struct MinSubBlockFit {
  float scale = 0;
  float min = 0;
};

// The step sizes a sub-block fit tries, as inverse steps
//   (max_level - below + 0.1 * s) / (max - min),  s = 0..steps.
struct MinStepRange {
  float below;
  int steps;
};

// Fits each of the n_sub sub-blocks of sub_elems (at most 32) values of x, weighted by
// importance_weights (written to w, n_sub * sub_elems values), into fits;
// returns the largest scale and the largest min over them.
MinSubBlockFit fit_min_sub_blocks(const float* x, int n_sub, int sub_elems, int max_level,
                                  MinStepRange range, float* w, MinSubBlockFit* fits);

// Weighted error of n values x encoded at `step` and `min`, their levels
// recomputed for those values and written to q.
float encode_min_sub_block(const float* x, const float* w, int n, float step, float min,
                           int max_level, uint8_t* q);

}  // namespace kvforge
