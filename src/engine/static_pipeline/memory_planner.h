// Memory planning: places buffers with known sizes and lifetimes in one arena
// so that buffers alive at the same time never overlap and the others share
// bytes. Greedy by size (largest first), each at the lowest offset that fits
// between the buffers already placed whose lifetimes intersect its own: the
// classic offline heuristic, near the peak live size for op sequences like a
// transformer's.
#pragma once

#include <cstdint>
#include <vector>

namespace kvforge {

struct BufferLifetime {
  uint64_t bytes = 0;
  int32_t first_op = 0;  // first op reading or writing it
  int32_t last_op = 0;   // last such op (inclusive)
};

inline constexpr uint64_t kArenaAlignment = 64;

struct ArenaLayout {
  std::vector<uint64_t> offsets;  // [buffers], multiples of kArenaAlignment
  uint64_t arena_bytes = 0;       // end of the furthest buffer, rounded up to the alignment
};

ArenaLayout plan_arena(const std::vector<BufferLifetime>& buffers);

}  // namespace kvforge
