// The static pipeline's B batch slots as the engine's KV manager
// (kv/kv_manager.h): one slot of max_prompt_len + min_response_len positions
// per branch for its whole life, in the static cache StaticRunner owns.
//
// Admission takes the free slot that keeps the most of the prompt (ties:
// the lowest index) and a request of n branches waits for n free slots
// (can_admit with width n). With reuse_slots a slot keeps its K/V when its
// branch ends, and the next prompt sharing a prefix with it starts there:
// the slot is cut back to that prefix, as long as at most prefill_chunk new
// prompt tokens follow it (they go through the generate plan one at a time;
// beyond that, prefilling the whole prompt chunk by chunk is cheaper) and a
// sliding-window ring still holds what the next position reads. Without it,
// a freed slot is emptied.
//
// The token ids a slot holds come from mark_computed, which the engine calls
// after each step for what it computed.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/kv/kv_manager.h"
#include "engine/static_pipeline/static_runner.h"

namespace kvforge {

class StaticSlotManager final : public KvManager {
 public:
  // `runner` must outlive the manager.
  StaticSlotManager(StaticRunner& runner, bool reuse_slots);

  // What the free slot best suited to `tokens` keeps of them.
  int32_t cached_prefix(std::span<const int32_t> tokens) const override;
  // `width` free slots; n_tokens within the capacity.
  bool can_admit(std::span<const int32_t> tokens, int32_t n_tokens, int width) const override;
  // Claims the best free slot and returns what it keeps (cached_prefix);
  // its K/V is cut back to that when the engine fills it (truncate).
  int32_t admit(SeqId seq, std::span<const int32_t> tokens, int32_t n_tokens) override;
  bool can_append(SeqId seq, int32_t n) const override;
  void append(SeqId seq, int32_t n) override;
  // Cuts the slot's K/V and tokens back to n_tokens positions.
  void truncate(SeqId seq, int32_t n_tokens) override;
  void mark_computed(SeqId seq, std::span<const int32_t> tokens, int32_t n_computed) override;
  void free(SeqId seq) override;
  // Context shift: drops tokens [first, first + drop) of the sequence's slot
  // (StaticRunner::shift). What follows them was computed with the dropped
  // tokens in view, so a later prompt reuses at most `first` of the slot.
  void shift(SeqId seq, int32_t first, int32_t drop);

  // Empties every free slot whose tokens and `tokens` agree over the shorter
  // of the two (Engine::forget_prefix); returns the tokens those slots held.
  int32_t forget(std::span<const int32_t> tokens);

  // For slot save and restore (static_slot_io.h). The free slot whose tokens
  // share the longest prefix with `tokens` (-1 when no slot is free) and the
  // length of that prefix.
  int32_t free_slot_holding(std::span<const int32_t> tokens, int32_t* common) const;
  // An emptied free slot to restore into (an empty one first, else the one
  // holding the fewest tokens), -1 when none is free; then `held` records the
  // tokens whose K/V were put in it (import_run), which later prompts reuse.
  int32_t empty_free_slot();
  void held(int32_t slot, std::span<const int32_t> tokens);

  // The slot `seq` holds; std::logic_error when it holds none.
  int32_t slot_of(SeqId seq) const;
  int32_t slots() const { return int32_t(slots_.size()); }
  int32_t occupied() const { return occupied_; }
  // Positions filled in the occupied slots.
  int64_t positions_filled() const;

 private:
  struct Slot {
    SeqId seq = -1;                // -1: free
    int32_t reserved = 0;          // positions granted (admit + append)
    std::vector<int32_t> tokens;   // [capacity reserved] whose K/V the slot holds, in order
    int32_t reusable = INT32_MAX;  // leading tokens a later prompt may reuse (a shift cuts it)
  };
  // Leading positions of what the slot holds that a branch of `prompt` keeps.
  int32_t reusable(int32_t slot, std::span<const int32_t> prompt) const;
  // The free slot keeping the most of `prompt`, -1 when none is free.
  int32_t best_free(std::span<const int32_t> prompt, int32_t* kept) const;

  StaticRunner& runner_;
  bool reuse_;
  std::vector<Slot> slots_;  // [B]
  int32_t occupied_ = 0;
};

}  // namespace kvforge
