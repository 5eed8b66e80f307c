// The disk tier's read side (PrefixTier, prefix_tier.h), one path for both
// KV modes: which prompt blocks the tier holds, loads of them on a
// PrefixLoader thread, and the hit/miss accounting on the engine thread
// when a load is taken. Each mode says only where a loading sequence's
// blocks go and what landing them means:
//   - the paged pool (disk_prefix_tier.h): straight into the pool blocks the
//     scheduler reserved for it; landing needs nothing more;
//   - a static slot (static_pipeline/static_prefix_tier.h): into a staging
//     buffer, copied into the slot when the load lands, on the engine thread,
//     since the slot lives in the cache every generate plan spans.
//
// A hybrid model's tier (KvDiskTier::identity().state_bytes > 0) restores a
// prefix only up to a block boundary whose recurrent-state snapshot is on
// disk too: available() and start_load() shorten a run of blocks to the
// last such boundary, the load reads that snapshot after the blocks, and a
// load whose snapshot fails to verify restores nothing (K/V without the
// state after it is of no use). The mode says where the snapshot goes
// (state_destination) and applies it in landed().
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/kv/kv_disk_tier.h"
#include "engine/kv/prefix_loader.h"
#include "engine/kv/prefix_tier.h"

namespace kvforge {

class DiskTierReader : public PrefixTier {
 public:
  int32_t block_size() const override { return block_size_; }
  int32_t available(std::span<const int32_t> tokens, int32_t from_block,
                    int32_t max_blocks) override;
  void start_load(SeqId seq, std::span<const int32_t> tokens, int32_t from_block, int32_t n,
                  int32_t eligible) override;
  std::vector<LoadedPrefix> take_loaded(bool wait) override;
  void cancel_load(SeqId seq) override;
  void note_misses(int32_t n) override { disk_.note_misses(n); }

 protected:
  // disk must outlive this.
  DiskTierReader(KvDiskTier& disk, int32_t block_size);

  // Where block i of seq's load (block from_block + i of its tokens, n in
  // all) goes: asked on the engine thread when the load starts; the function
  // runs on the loader thread.
  virtual std::function<void(size_t i, std::span<const uint8_t> payload)> destination(
      SeqId seq, int32_t from_block, int32_t n) = 0;
  // The first `good` blocks of seq's load are at their destination (engine
  // thread, before take_loaded reports it).
  virtual void landed(SeqId seq, int32_t from_block, int32_t good) = 0;
  // seq's load is gone (taken or cancelled): its destination is free.
  virtual void dropped(SeqId seq) = 0;
  // Where the snapshot of seq's load goes (hybrid models; asked as
  // destination() is, runs on the loader thread). Null: this mode restores
  // no states, and a hybrid tier's start_load throws.
  virtual std::function<void(std::span<const uint8_t> payload)> state_destination(SeqId) {
    return nullptr;
  }

  // Chain hashes of blocks [0, n_blocks) of `tokens` (a few ns per token).
  std::vector<uint64_t> hashes(std::span<const int32_t> tokens, int32_t n_blocks) const;

  KvDiskTier& disk_;
  const int32_t block_size_;
  const bool with_states_;  // a hybrid model's tier: loads end at a snapshot

 private:
  // n, shortened to the last boundary with a snapshot (hybrid models).
  int32_t to_snapshot(std::span<const uint64_t> h, int32_t from_block, int32_t n) const;
  // Accounts for a load's reads; the blocks it restored (0 without its state).
  int32_t note_reads(const PrefixLoadResult& r);

  std::vector<LoadedPrefix> ready_;  // loads of no block (no snapshot to end them): landed
  std::vector<std::pair<SeqId, int32_t>> from_blocks_;  // loads in flight: seq, from_block
  // Last: its thread stops first. A mode whose destination it owns cancels
  // its loads in its own destructor, which runs before this one.
  PrefixLoader loader_;
};

}  // namespace kvforge
