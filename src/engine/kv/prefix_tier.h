// A tier below the KV in RAM (the disk: kv_disk_tier.h), in two sides, each
// one path for both KV modes.
//
// Write side (PrefixTierWriter): after every step the engine's
// post-processing hands the tier what the step computed, while it is still
// in the cache, and the tier writes through the full blocks it lacks (the
// paged pool: every block the prefix cache registered, disk_prefix_tier.h;
// the static slots: the prompt's, static_pipeline/static_prefix_tier.h).
//
// Read side (PrefixTier), for the scheduler, which can restore full prefix
// blocks from it instead of recomputing them (disk_tier_reader.h). At
// admission it asks how many blocks past those held in RAM (the prefix
// cache's, or what a static slot keeps) the tier could serve (no I/O), and
// starts a load of them; the load runs off the engine thread while the
// sequence waits in the loading state, and lands at the start of a later
// step. A sequence is never half-allocated: positions of files that fail to
// verify are given back when the load lands, and the sequence computes them
// instead. Prompt blocks past RAM's that no load restores count as misses.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/kv/kv_manager.h"

namespace kvforge {

// What one step computed of a sequence: K/V of positions [first,
// n_computed) of `tokens` (all its token ids), the first n_prompt of which
// are its prompt.
struct ComputedRun {
  SeqId seq;
  std::span<const int32_t> tokens;
  int32_t first;
  int32_t n_computed;
  int32_t n_prompt;
};

class PrefixTierWriter {
 public:
  virtual ~PrefixTierWriter() = default;
  // Writes the full blocks among `runs` (the whole step's) that the tier lacks.
  virtual void store_computed(std::span<const ComputedRun> runs) = 0;
};

// A load that ended: the first `blocks` of the blocks asked for hold
// restored K/V (possibly fewer than asked, possibly none).
struct LoadedPrefix {
  SeqId seq;
  int32_t blocks;
};

class PrefixTier : public PrefixTierWriter {
 public:
  // Tokens per block: the pool's block size.
  virtual int32_t block_size() const = 0;
  // Blocks from_block, from_block + 1, ... (at most max_blocks) of `tokens`
  // the tier has an entry for. No I/O: a load may still find fewer.
  virtual int32_t available(std::span<const int32_t> tokens, int32_t from_block,
                            int32_t max_blocks) = 0;
  // Starts restoring n blocks from from_block on into seq's block table
  // entries [from_block, from_block + n) (fresh blocks allocate() gave it).
  // `eligible`: prompt blocks past the RAM prefix, for the miss count.
  virtual void start_load(SeqId seq, std::span<const int32_t> tokens, int32_t from_block, int32_t n,
                          int32_t eligible) = 0;
  // Loads that ended since the last call. Never blocks unless `wait`: then
  // returns once at least one has ended, if any is in flight; a load stuck
  // on a read ends after a bounded time with the blocks it read so far.
  virtual std::vector<LoadedPrefix> take_loaded(bool wait) = 0;
  // Abandons seq's load; on return nothing writes into its blocks any more.
  virtual void cancel_load(SeqId seq) = 0;
  // Prompt blocks past the RAM prefix of an admission that loads nothing.
  virtual void note_misses(int32_t n) = 0;
};

}  // namespace kvforge
