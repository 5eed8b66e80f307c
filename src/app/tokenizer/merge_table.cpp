#include "app/tokenizer/merge_table.h"

#include <utility>

namespace kvforge {

MergeTable::MergeTable(size_t expected_entries) {
  size_t capacity = 16;
  while (capacity < 2 * expected_entries) capacity *= 2;
  slots_.assign(capacity, Slot{kEmpty, {}});
  mask_ = capacity - 1;
}

uint64_t MergeTable::slot_of(uint64_t key) const {
  // splitmix64 finaliser: ids are small and dense, so mix before masking.
  key ^= key >> 30;
  key *= 0xbf58476d1ce4e5b9ull;
  key ^= key >> 27;
  key *= 0x94d049bb133111ebull;
  key ^= key >> 31;
  return key & mask_;
}

void MergeTable::insert(int32_t left, int32_t right, MergeRule rule) {
  if (2 * (size_ + 1) > slots_.size()) {
    // Grow: only reached when more entries arrive than announced.
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.size() * 2, Slot{kEmpty, {}});
    mask_ = slots_.size() - 1;
    size_ = 0;
    for (const Slot& s : old) {
      if (s.key != kEmpty) {
        insert(static_cast<int32_t>(s.key >> 32), static_cast<int32_t>(s.key & 0xFFFFFFFF), s.rule);
      }
    }
  }
  const uint64_t key = key_of(left, right);
  for (uint64_t slot = slot_of(key);; slot = (slot + 1) & mask_) {
    if (slots_[slot].key == key) return;
    if (slots_[slot].key == kEmpty) {
      slots_[slot] = {key, rule};
      ++size_;
      return;
    }
  }
}

const MergeRule* MergeTable::find(int32_t left, int32_t right) const {
  const uint64_t key = key_of(left, right);
  for (uint64_t slot = slot_of(key);; slot = (slot + 1) & mask_) {
    if (slots_[slot].key == key) return &slots_[slot].rule;
    if (slots_[slot].key == kEmpty) return nullptr;
  }
}

}  // namespace kvforge
