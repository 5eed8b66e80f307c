// The disk tier wired to the paged pool: restores prefix blocks from
// KvDiskTier files into pool blocks (PrefixTier, asked by the scheduler at
// admission; the reads run on a PrefixLoader thread, the accounting here on
// the engine thread when a load is taken) and writes every newly cached full
// block through to disk (store_computed, called by the engine after each
// forward pass, while the blocks still hold what was just computed).
//
// Write-through rather than write-on-evict: a block's token ids are at hand
// when it is computed, but not when the pool evicts it (its parent may be
// gone), and with every cached block already on disk eviction costs nothing.
// A file is written once per prefix; restored blocks are not rewritten.
//
// Only models whose layers form one full-attention group use it (the engine
// checks): a windowed group releases blocks as its window moves, so a
// restored prefix would need blocks that were never kept.
#pragma once

#include <vector>

#include "engine/kv/kv_disk_tier.h"
#include "engine/kv/paged_kv_cache.h"
#include "engine/kv/prefix_loader.h"
#include "engine/kv/prefix_tier.h"

namespace kvforge {

class DiskPrefixTier final : public PrefixTier {
 public:
  // blocks and cache must outlive this; blocks gets record_new_entries().
  DiskPrefixTier(KvDiskTier& disk, BlockManager& blocks, PagedKvCache& cache);

  int32_t block_size() const override { return block_size_; }
  int32_t available(std::span<const int32_t> tokens, int32_t from_block,
                    int32_t max_blocks) override;
  void start_load(SeqId seq, std::span<const int32_t> tokens, int32_t from_block, int32_t n,
                  int32_t eligible) override;
  std::vector<LoadedPrefix> take_loaded(bool wait) override;
  void cancel_load(SeqId seq) override;
  void note_misses(int32_t n) override { disk_.note_misses(n); }

  // Writes the blocks the manager registered since the last call that the
  // tier lacks; `runs` must name every sequence of those (restored blocks,
  // registered when their load landed, are on disk already).
  void store_computed(std::span<const ComputedRun> runs) override;

 private:
  void store(const BlockManager::NewEntry& e, std::span<const int32_t> tokens);
  // Chain hashes of blocks [0, n_blocks) of `tokens` (a few ns per token).
  std::vector<uint64_t> hashes(std::span<const int32_t> tokens, int32_t n_blocks) const;

  KvDiskTier& disk_;
  BlockManager& blocks_;
  PagedKvCache& cache_;
  int32_t block_size_;
  std::vector<uint8_t> out_;  // [block_bytes] one block being stored
  PrefixLoader loader_;       // last: its thread stops first
};

}  // namespace kvforge
