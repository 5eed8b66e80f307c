// A tier below the pool's prefix cache that the scheduler can restore full
// prefix blocks from instead of recomputing them (the disk tier:
// disk_prefix_tier.h). The scheduler asks in three steps so a sequence is
// never half-allocated: how many blocks the tier could serve (no I/O), then
// fetch (read and verify them, before any block is allocated), then install
// (copy them into the blocks allocate() gave the sequence).
#pragma once

#include <cstdint>
#include <span>

#include "engine/kv/block_manager.h"

namespace kvforge {

class PrefixTier {
 public:
  virtual ~PrefixTier() = default;
  // Blocks from_block, from_block + 1, ... (at most max_blocks) of `tokens`
  // the tier has an entry for. No I/O: a fetch may still find fewer.
  virtual int32_t available(std::span<const int32_t> tokens, int32_t from_block,
                            int32_t max_blocks) = 0;
  // Reads and verifies up to n blocks from from_block on; returns how many
  // leading ones are good (kept until install). `eligible`: prompt blocks
  // past the RAM prefix, for the miss count.
  virtual int32_t fetch(std::span<const int32_t> tokens, int32_t from_block, int32_t n,
                        int32_t eligible) = 0;
  // Copies the fetched blocks into seq's block table entries [from_block,
  // from_block + n) (fresh blocks: allocate() reused only RAM's prefix).
  virtual void install(SeqId seq, int32_t from_block, int32_t n) = 0;
};

}  // namespace kvforge
