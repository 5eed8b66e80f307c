#include "engine/static_pipeline/memory_planner.h"

#include <algorithm>
#include <numeric>

namespace kvforge {
namespace {

uint64_t align_up(uint64_t n) {
  return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

bool lifetimes_overlap(const BufferLifetime& a, const BufferLifetime& b) {
  return a.first_op <= b.last_op && b.first_op <= a.last_op;
}

}  // namespace

ArenaLayout plan_arena(const std::vector<BufferLifetime>& buffers) {
  ArenaLayout layout;
  layout.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });

  struct Placed {
    uint64_t begin, end;
  };
  std::vector<size_t> placed;
  std::vector<Placed> conflicts;
  for (size_t id : order) {
    conflicts.clear();
    for (size_t other : placed)
      if (lifetimes_overlap(buffers[id], buffers[other]))
        conflicts.push_back({layout.offsets[other], layout.offsets[other] + buffers[other].bytes});
    std::sort(conflicts.begin(), conflicts.end(),
              [](const Placed& a, const Placed& b) { return a.begin < b.begin; });
    uint64_t offset = 0;
    for (const Placed& c : conflicts) {
      if (offset + buffers[id].bytes <= c.begin) break;  // fits in the gap before c
      offset = std::max(offset, align_up(c.end));
    }
    layout.offsets[id] = offset;
    layout.arena_bytes = std::max(layout.arena_bytes, align_up(offset + buffers[id].bytes));
    placed.push_back(id);
  }
  return layout;
}

}  // namespace kvforge
