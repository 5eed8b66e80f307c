// The context shift over static slots (the paged one is engine_shift.cpp):
// a slot is compacted in place, the positions after the dropped ones moved
// down and their K re-rotated (kv_shift.h), V as it is, the mask cut to the
// new length. Nothing is recomputed and nothing is allocated beyond the
// rotation's scratch.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/static_pipeline/static_kv_cache.h"
#include "engine/static_pipeline/static_runner.h"
#include "engine/static_pipeline/static_slot_manager.h"

namespace kvforge {

void StaticKvCache::shift(int32_t slot, int32_t first, int32_t drop, int32_t n,
                          std::span<const RopeTable* const> ropes) {
  if (ring_ > 0 || states_.n_slots() > 0)
    throw std::logic_error(
        "static KV cache: a context shift needs a model without sliding-window or "
        "linear-attention layers (a recurrent state cannot drop tokens)");
  if (slot < 0 || slot >= slots_ || first < 0 || drop < 0 || first + drop > n || n > capacity_ ||
      ropes.size() != size_t(n_layer_))
    throw std::out_of_range("static KV cache: shift of slot " + std::to_string(slot) + ", [" +
                            std::to_string(first) + ", " + std::to_string(first + drop) +
                            ") out of " + std::to_string(n) + " positions");
  const int32_t moved = n - first - drop;
  for (int layer = 0; layer < n_layer_; ++layer) {
    const int g = group_index_[size_t(layer)];
    if (g < 0) continue;  // a shared layer: its source's records move
    full_->move_down(g, slot, first, drop, n);
    full_->rerotate_k(g, slot, first, moved, *ropes[size_t(layer)], -drop);
  }
  truncate(slot, n - drop);
}

void StaticRunner::shift(int32_t slot, int32_t first, int32_t drop) {
  check_slot(slot);
  std::vector<const RopeTable*> ropes;
  for (int layer = 0; layer < model_.config().n_layer; ++layer)
    ropes.push_back(&model_.rope(layer));
  const int32_t n = lengths_[size_t(slot)];
  cache_.shift(slot, first, drop, n, ropes);
  lengths_[size_t(slot)] = n - drop;
}

void StaticSlotManager::shift(SeqId seq, int32_t first, int32_t drop) {
  const int32_t index = slot_of(seq);
  Slot& slot = slots_[size_t(index)];
  if (first < 0 || drop <= 0 || size_t(first + drop) > slot.tokens.size())
    throw std::logic_error("static slots: sequence " + std::to_string(seq) + " cannot drop [" +
                           std::to_string(first) + ", " + std::to_string(first + drop) + ") of " +
                           std::to_string(slot.tokens.size()) + " tokens");
  runner_.shift(index, first, drop);
  slot.tokens.erase(slot.tokens.begin() + first, slot.tokens.begin() + first + drop);
  slot.reserved -= drop;
  slot.reusable = std::min(slot.reusable, first);
}

}  // namespace kvforge
