// Input validation shared by the quantizers: a NaN or inf weight cannot be
// represented by any block format (it would poison the block's scale), so it
// is reported with its position instead of being silently encoded.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace kvforge {

inline void require_finite_block(const char* who, const float* x, int n, int64_t first_index) {
  for (int i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) {
      throw std::invalid_argument(std::string(who) + ": non-finite value " + std::to_string(x[i]) +
                                  " at element " + std::to_string(first_index + i));
    }
  }
}

// Quantizes n values (whole blocks of Block::kElems) block by block with
// quantize_block(x, block), refusing a block with a non-finite value; `who`
// names the caller in the error.
template <class Block, class QuantizeBlock>
void quantize_row_blocks(const char* who, const float* src, Block* dst, int64_t n,
                         QuantizeBlock quantize_block) {
  const int64_t n_blocks = n / Block::kElems;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * Block::kElems;
    require_finite_block(who, x, Block::kElems, b * Block::kElems);
    quantize_block(x, dst[b]);
  }
}

// Nearest integer, ties to even (the default rounding mode), for |v| < 2^31.
inline int nearest_int(float v) { return int(std::lrintf(v)); }

}  // namespace kvforge
