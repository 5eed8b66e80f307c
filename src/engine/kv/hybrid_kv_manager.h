// The KV manager of a hybrid model (Qwen 3.5): the block manager for the
// attention layers' K/V, and one recurrent-state slot per branch from the
// state pool (kv/recurrent_state_pool.h) for the linear-attention layers.
// A sequence is admitted only when both have room (a slot for each branch
// it will fork into: width); freeing releases both; a fork copies the
// parent's state into a slot of its own. The pool holds max_seqs slots and
// the scheduler keeps the running sequences' widths within max_seqs, so a
// fork always finds its slot.
//
// Prefix reuse needs the recurrent state after the reused prefix, which K/V
// cannot rebuild: with state snapshots (kv/state_snapshots.h) a sequence
// admitted with a prompt of n tokens takes a snapshot at its last block
// boundary before n (the longest prefix a later request with this prompt
// can reuse: one token is always computed), and a prompt whose cached K/V
// prefix reaches a snapshot's tokens reuses that prefix, its state restored
// from the snapshot; the block manager reuses nothing past it. Without
// snapshots cached_prefix is 0 and the block manager under it must be built
// with its prefix cache disabled (checked).
#pragma once

#include <span>
#include <unordered_map>

#include "engine/kv/block_manager.h"
#include "engine/kv/recurrent_state_pool.h"
#include "engine/kv/state_snapshots.h"

namespace kvforge {

class HybridKvManager final : public KvManager {
 public:
  // `snapshots` may be null (no prefix reuse); it must outlive the manager.
  HybridKvManager(BlockManager& blocks, RecurrentStatePool& states,
                  StateSnapshots* snapshots = nullptr);

  int32_t cached_prefix(std::span<const int32_t> tokens) const override;
  bool can_admit(std::span<const int32_t> tokens, int32_t n_tokens, int width) const override;
  int32_t admit(SeqId seq, std::span<const int32_t> tokens, int32_t n_tokens) override;
  bool can_append(SeqId seq, int32_t n) const override { return blocks_.can_append(seq, n); }
  void append(SeqId seq, int32_t n) override { blocks_.append(seq, n); }
  void truncate(SeqId seq, int32_t n_tokens) override { blocks_.truncate(seq, n_tokens); }
  void mark_computed(SeqId seq, std::span<const int32_t> tokens, int32_t n_computed) override;
  void free(SeqId seq) override;

  // `child` shares the parent's blocks and gets a copy of its states.
  void fork(SeqId parent, SeqId child);

  // Sets seq's states to `bytes` (a snapshot restored by a lower tier) after
  // its first `length` tokens; a snapshot seq was to take there gets them too.
  void restore_state(SeqId seq, std::span<const uint8_t> bytes, int32_t length);

  // `layer`'s state of `seq`, for the KV store.
  RecurrentState state(int layer, SeqId seq);
  const RecurrentStatePool& states() const { return states_; }

 private:
  int32_t slot_of(SeqId seq) const;
  StateSnapshots::Hit hit(std::span<const int32_t> tokens) const;
  void plan_snapshot(SeqId seq, std::span<const int32_t> tokens, int32_t reused);

  BlockManager& blocks_;
  RecurrentStatePool& states_;
  StateSnapshots* snapshots_;
  std::unordered_map<SeqId, int32_t> slots_;    // each sequence's state slot
  std::unordered_map<SeqId, int32_t> pending_;  // snapshot entries the sequences' steps fill
};

}  // namespace kvforge
