// KV block bookkeeping for the paged cache: which blocks each sequence owns,
// reference counts, copy-on-write, and the prefix cache. Metadata only: it
// never touches K/V tensors (the paged store does, told by the runner which
// blocks to copy).
//
// Allocation is a question, then an action: every mutating call has a
// can_* twin that answers without changing anything, and a mutating call
// whose question would have said "no" throws std::logic_error leaving the
// manager unchanged. The scheduler never leaves a sequence half-allocated.
// Misuse (unknown or already existing sequence, counts out of range) throws
// std::invalid_argument (also a logic_error), likewise changing nothing.
//
// Prefix cache: a *full* block whose K/V has been computed is registered
// under hash(parent block's hash, its block_size token ids), chained from
// the first block, so a hash names a whole prefix. A lookup verifies the
// stored token ids (hash collisions cannot serve wrong K/V). A cached block
// whose refcount drops to 0 is not wiped: it joins the free pool as
// "evictable" and is handed out again only when no never-cached free block
// is left, oldest release first (LRU); being handed out evicts it. free()
// releases a sequence's last block first, so a prefix's tail is evicted
// before its head. Lookup and verification: prefix_cache.h.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/kv/prefix_cache.h"
#include "kvforge/engine_stats.h"

namespace kvforge {

using BlockId = int32_t;
using SeqId = int32_t;  // the KvStore's sequence id

struct BlockCopy {
  BlockId src;
  BlockId dst;
};

class BlockManager {
 public:
  // block_size: power of two in [1, 256]; n_blocks ≥ 1.
  BlockManager(int32_t n_blocks, int32_t block_size, bool enable_prefix_cache);

  int32_t block_size() const;
  int32_t n_blocks() const;
  // Blocks with refcount 0, evictable cached ones included.
  int32_t n_free_blocks() const;
  // Blocks needed to hold n_tokens positions.
  int32_t blocks_for(int32_t n_tokens) const;

  // --- admission -----------------------------------------------------------
  // Prompt tokens whose K/V the prefix cache already holds for `tokens`: a
  // multiple of block_size, and always < tokens.size() so at least one token
  // is computed (its logits are needed). Pure question, no counters touched.
  int32_t cached_prefix(std::span<const int32_t> tokens) const;
  // Can `seq` be created holding the first n_tokens of `tokens` (reusing the
  // cached prefix, fresh blocks for the rest)?
  bool can_allocate(std::span<const int32_t> tokens, int32_t n_tokens) const;
  // Creates `seq` (must not exist) with blocks for the first n_tokens of
  // `tokens`; returns how many leading tokens already have K/V (the cached
  // prefix, ≤ n_tokens), which the caller must not recompute. Updates the
  // prefix-cache counters.
  int32_t allocate(SeqId seq, std::span<const int32_t> tokens, int32_t n_tokens);

  // --- growth --------------------------------------------------------------
  // Room for n more positions after the seq's current length, counting the
  // copy a shared partial last block needs before it can be written.
  bool can_append(SeqId seq, int32_t n) const;
  // Reserves n more positions; the seq's token ids for them come with
  // mark_computed. If the last block is shared (refcount > 1) and partial,
  // it is replaced by a private copy, recorded for take_pending_copies().
  void append(SeqId seq, int32_t n);
  // Block copies the store must perform before the next forward pass; the
  // caller takes and clears them. A copy into a block released meanwhile
  // (its sequence freed) is dropped.
  std::vector<BlockCopy> take_pending_copies();

  // Records that positions [0, n_computed) of `seq` now hold the K/V of
  // tokens[0, n_computed): full blocks among them become prefix-cache entries.
  // n_computed ≤ seq_tokens(seq); call it after each step with the count so
  // far (blocks already registered are skipped). A no-op without the cache.
  void mark_computed(SeqId seq, std::span<const int32_t> tokens, int32_t n_computed);

  // --- sharing and release -------------------------------------------------
  // `child` (must not exist) shares every block of `parent`; the next append
  // to either side copies a shared partial last block (copy-on-write).
  void fork(SeqId parent, SeqId child);
  // Releases the seq's blocks (refcount −1; cached ones stay reusable).
  void free(SeqId seq);

  bool has_seq(SeqId seq) const;
  int32_t seq_tokens(SeqId seq) const;  // positions reserved
  // [blocks_for(seq_tokens)] blocks in position order; valid until the next
  // call that changes this seq (append may replace the last block).
  std::span<const BlockId> block_table(SeqId seq) const;
  int32_t refcount(BlockId block) const;

  const PrefixCacheStats& prefix_stats() const;

 private:
  struct Seq {
    std::vector<BlockId> table;  // [blocks_for(n_tokens)] block of each block_size positions
    int32_t n_tokens = 0;        // positions reserved
    // Prefix-cache entries of this seq's leading full computed blocks, one
    // per block, in order. An entry may name another block holding the same
    // tokens (when that one was registered first); it is the parent the
    // seq's next full block registers under.
    std::vector<PrefixEntryRef> chain;
  };

  Seq& seq_state(SeqId seq, const char* what);
  const Seq& seq_state(SeqId seq, const char* what) const;
  void check_new_seq(SeqId seq, const char* what) const;
  void check_tokens(std::span<const int32_t> tokens, int32_t n_tokens, const char* what) const;
  // Cached chain allocate() would reuse for the first n_tokens of `tokens`.
  std::vector<PrefixEntryRef> reusable_chain(std::span<const int32_t> tokens,
                                             int32_t n_tokens) const;
  // Blocks allocate() would take from the free pool: fresh ones plus cached
  // ones that sit in it (refcount 0).
  int32_t blocks_taken_by_allocate(const std::vector<PrefixEntryRef>& chain,
                                   int32_t n_tokens) const;
  int32_t blocks_needed_to_append(const Seq& s, int32_t n) const;
  // A free block for new content: a never-cached one if any, else the least
  // recently released cached one (evicting its entry). Refcount becomes 1.
  BlockId take_free_block();
  void acquire(BlockId block);  // one more owner (refcount +1)
  void release(BlockId block);  // one owner less; at 0 the block rejoins the free pool

  int32_t n_blocks_;
  int32_t block_size_;
  bool prefix_enabled_;
  std::vector<int32_t> refcount_;   // [n_blocks]
  std::vector<BlockId> free_list_;  // never-cached free blocks; the back is handed out first
  std::unordered_map<SeqId, Seq> seqs_;
  std::vector<BlockCopy> pending_copies_;
  std::optional<PrefixCache> prefix_;  // entries and evictable blocks; empty when disabled
  PrefixCacheStats stats_;
};

}  // namespace kvforge
