// BPE merge rules keyed by the pair of token ids they join.
//
// Open addressing with linear probing: the 150k-280k merges of LLaMA-3 or
// Qwen2 load in one allocation, and a lookup is a hash and a few probes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvforge {

struct MergeRule {
  int32_t rank;    // position in tokenizer.ggml.merges: lower merges first
  int32_t result;  // id of the joined token
};

class MergeTable {
 public:
  explicit MergeTable(size_t expected_entries);

  // Keeps the first rule for a pair (the lowest rank when inserted in rank order).
  void insert(int32_t left, int32_t right, MergeRule rule);
  // nullptr when the pair has no rule.
  const MergeRule* find(int32_t left, int32_t right) const;
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key;  // (left << 32) | right; kEmpty when free
    MergeRule rule;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t key_of(int32_t left, int32_t right) {
    return (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
  }
  uint64_t slot_of(uint64_t key) const;

  std::vector<Slot> slots_;  // (capacity) power of two >= 2 * expected entries
  uint64_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace kvforge
