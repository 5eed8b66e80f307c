// The walk over a row's blocks that every format's dequantizer shares.
#pragma once

#include <cstdint>

namespace kvforge {

// fn(block, out) for each of the n / Block::kElems blocks of src, out being
// that block's Block::kElems values in dst.
template <class Block, class Fn>
void for_each_block(const Block* src, float* dst, int64_t n, const Fn& fn) {
  const int64_t n_blocks = n / Block::kElems;
  for (int64_t b = 0; b < n_blocks; ++b) fn(src[b], dst + b * Block::kElems);
}

}  // namespace kvforge
