// The disk tier wired to the paged pool: restores prefix blocks from
// KvDiskTier files straight into the pool blocks the scheduler reserved for
// them (the read side both modes share, disk_tier_reader.h) and writes
// every newly cached full block through to disk (store_computed, called by
// the engine after each forward pass, while the blocks still hold what was
// just computed).
//
// Write-through rather than write-on-evict: a block's token ids are at hand
// when it is computed, but not when the pool evicts it (its parent may be
// gone), and with every cached block already on disk eviction costs nothing.
// A file is written once per prefix; restored blocks are not rewritten.
//
// Only models whose layers form one full-attention group use it (the engine
// checks): a windowed group releases blocks as its window moves, so a
// restored prefix would need blocks that were never kept.
//
// A hybrid model's tier also writes every state snapshot the RAM snapshots
// finish (kv/state_snapshots.h) beside its prefix's blocks, and a load
// ends at a snapshot on disk (disk_tier_reader.h): it is read into a
// staging buffer of the sequence and set as its state when the load lands.
#pragma once

#include <unordered_map>
#include <vector>

#include "engine/kv/block_manager.h"
#include "engine/kv/disk_tier_reader.h"
#include "engine/kv/hybrid_kv_manager.h"
#include "engine/kv/paged_kv_cache.h"

namespace kvforge {

class DiskPrefixTier final : public DiskTierReader {
 public:
  // blocks and cache must outlive this; blocks gets record_new_entries().
  // A hybrid model's tier needs its manager and snapshots (which get
  // record_finished()), outliving this too; null otherwise.
  DiskPrefixTier(KvDiskTier& disk, BlockManager& blocks, PagedKvCache& cache,
                 HybridKvManager* hybrid = nullptr, StateSnapshots* snapshots = nullptr);
  ~DiskPrefixTier() override;

  // Writes the blocks the manager registered since the last call that the
  // tier lacks; `runs` must name every sequence of those (restored blocks,
  // registered when their load landed, are on disk already).
  void store_computed(std::span<const ComputedRun> runs) override;

 private:
  // Blocks [from_block, from_block + n) of seq's block table.
  std::function<void(size_t, std::span<const uint8_t>)> destination(SeqId seq, int32_t from_block,
                                                                    int32_t n) override;
  std::function<void(std::span<const uint8_t>)> state_destination(SeqId seq) override;
  // The pool holds the blocks already; a hybrid sequence gets its state.
  void landed(SeqId seq, int32_t from_block, int32_t good) override;
  void dropped(SeqId seq) override { staged_.erase(seq); }
  void store(const BlockManager::NewEntry& e, std::span<const int32_t> tokens);
  void store_states();

  BlockManager& blocks_;
  PagedKvCache& cache_;
  HybridKvManager* hybrid_;
  StateSnapshots* snapshots_;
  std::vector<uint8_t> out_;  // [block_bytes] one block being stored
  // Loading hybrid sequences' snapshots [state_bytes], filled by the loader thread.
  std::unordered_map<SeqId, std::vector<uint8_t>> staged_;
};

}  // namespace kvforge
