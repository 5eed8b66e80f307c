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
#pragma once

#include <vector>

#include "engine/kv/block_manager.h"
#include "engine/kv/disk_tier_reader.h"
#include "engine/kv/paged_kv_cache.h"

namespace kvforge {

class DiskPrefixTier final : public DiskTierReader {
 public:
  // blocks and cache must outlive this; blocks gets record_new_entries().
  DiskPrefixTier(KvDiskTier& disk, BlockManager& blocks, PagedKvCache& cache);

  // Writes the blocks the manager registered since the last call that the
  // tier lacks; `runs` must name every sequence of those (restored blocks,
  // registered when their load landed, are on disk already).
  void store_computed(std::span<const ComputedRun> runs) override;

 private:
  // Blocks [from_block, from_block + n) of seq's block table.
  std::function<void(size_t, std::span<const uint8_t>)> destination(SeqId seq, int32_t from_block,
                                                                    int32_t n) override;
  void landed(SeqId, int32_t, int32_t) override {}  // the pool holds them already
  void dropped(SeqId) override {}
  void store(const BlockManager::NewEntry& e, std::span<const int32_t> tokens);

  BlockManager& blocks_;
  PagedKvCache& cache_;
  std::vector<uint8_t> out_;  // [block_bytes] one block being stored
};

}  // namespace kvforge
