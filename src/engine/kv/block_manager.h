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
//
// Layer groups (kv_layer_groups.h; one full-attention group unless the model
// has sliding windows): a sequence has one block table per group, all
// indexed by position / block_size, and every block of the pool serves any
// group. A windowed group (window W) needs only what the next query can
// see: the query at position p reads (p - W, p]. So mark_computed(n) releases
// the seq's blocks of a windowed group that lie wholly below n - W + 1 (no
// future token, at position ≥ n, reads them) and their table entries become
// kNoBlock; allocate() with a cached prefix of r tokens takes only the
// blocks from r - W + 1 on. A windowed group therefore holds at most
// ceil((W - 1) / B) + 1 blocks of a sequence between steps, plus the blocks
// of the chunk being computed during one. Every count below (can_allocate,
// can_append, n_free_blocks) is over the one pool, summed over groups.
//
// Prefix cache with groups: group 0 (full attention when the model has such
// layers) chains as above; the other groups' entries are anchored on group
// 0's (prefix_cache.h). A cached prefix of d blocks is reused only when
// group 0 matches d blocks and every other group still caches the blocks the
// next query needs: all d for a full group, those covering positions
// [d*B - W + 1, d*B) for a windowed one. The longest such d is taken. When
// group 0 itself is windowed (every layer windowed) its chain must still be
// cached from depth 0, which is stricter than the window needs (older blocks
// are evicted first, so a long prefix is rarely reusable there) but never
// serves K/V of another prefix.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/kv/kv_manager.h"
#include "engine/kv/prefix_cache.h"
#include "kvforge/engine_stats.h"

namespace kvforge {

using BlockId = int32_t;

struct BlockCopy {
  BlockId src;
  BlockId dst;
};

class BlockManager final : public KvManager {
 public:
  static constexpr BlockId kNoBlock = -1;  // a table entry released by a window

  // block_size: power of two in [1, 256]; n_blocks ≥ 1. group_windows: the
  // window of each layer group (0 = full attention), full groups first when
  // there are any; the default is one full-attention group.
  BlockManager(int32_t n_blocks, int32_t block_size, bool enable_prefix_cache,
               std::vector<int32_t> group_windows = {0});

  int32_t block_size() const;
  int32_t n_blocks() const;
  // Blocks with refcount 0, evictable cached ones included.
  int32_t n_free_blocks() const;
  // Blocks needed to hold n_tokens positions.
  int32_t blocks_for(int32_t n_tokens) const;
  int32_t n_groups() const;
  int32_t group_window(int32_t group) const;
  const std::vector<int32_t>& group_windows() const { return group_windows_; }
  // Most blocks one sequence of n_tokens holds at once, all groups, when it
  // is fed at most `chunk` tokens per step (no sharing): blocks_for(n_tokens)
  // per full group, at most ceil((W - 1 + chunk) / B) + 1 per windowed one.
  int64_t max_blocks_for_seq(int64_t n_tokens, int32_t chunk) const;
  static int64_t max_blocks_for_seq(const std::vector<int32_t>& group_windows, int32_t block_size,
                                    int64_t n_tokens, int32_t chunk);

  // --- admission -----------------------------------------------------------
  // Prompt tokens whose K/V the prefix cache already holds for `tokens`: a
  // multiple of block_size, and always < tokens.size() so at least one token
  // is computed (its logits are needed). Pure question, no counters touched.
  int32_t cached_prefix(std::span<const int32_t> tokens) const override;
  // Can `seq` be created holding the first n_tokens of `tokens` (reusing the
  // cached prefix, at most max_reused tokens of it, fresh blocks for the rest)?
  bool can_allocate(std::span<const int32_t> tokens, int32_t n_tokens,
                    int32_t max_reused = INT32_MAX) const;
  // Creates `seq` (must not exist) with blocks for the first n_tokens of
  // `tokens`; returns how many leading tokens already have K/V (the cached
  // prefix, ≤ n_tokens), which the caller must not recompute. Updates the
  // prefix-cache counters unless `counted` is false (blocks moved in or out
  // of the cache, not a prompt admitted: Engine::export_prefix).
  int32_t allocate(SeqId seq, std::span<const int32_t> tokens, int32_t n_tokens,
                   int32_t max_reused = INT32_MAX, bool counted = true);
  // KvManager's names for the two: the branches forked off a sequence share
  // its blocks, so `width` asks for nothing more.
  bool can_admit(std::span<const int32_t> tokens, int32_t n_tokens, int) const override {
    return can_allocate(tokens, n_tokens);
  }
  int32_t admit(SeqId seq, std::span<const int32_t> tokens, int32_t n_tokens) override {
    return allocate(seq, tokens, n_tokens);
  }

  // --- growth --------------------------------------------------------------
  // Room for n more positions after the seq's current length, counting the
  // copy a shared partial last block needs before it can be written.
  bool can_append(SeqId seq, int32_t n) const override;
  // Reserves n more positions; the seq's token ids for them come with
  // mark_computed. If the last block of a group is shared (refcount > 1) and
  // partial, it is replaced by a private copy, recorded for take_pending_copies().
  void append(SeqId seq, int32_t n) override;
  // Gives back the positions past n_tokens (≤ seq_tokens, and no fewer than
  // the seq's registered full blocks cover): the blocks wholly past it are
  // released. For a prefix a lower tier failed to restore in full.
  void truncate(SeqId seq, int32_t n_tokens) override;
  // Block copies the store must perform before the next forward pass; the
  // caller takes and clears them. A copy into a block released meanwhile
  // (its sequence freed) is dropped.
  std::vector<BlockCopy> take_pending_copies();

  // Records that positions [0, n_computed) of `seq` now hold the K/V of
  // tokens[0, n_computed): full blocks among them become prefix-cache entries.
  // n_computed ≤ seq_tokens(seq); call it after each step with the count so
  // far (blocks already registered are skipped). Then releases the blocks of
  // windowed groups that no query at a position ≥ n_computed reads.
  void mark_computed(SeqId seq, std::span<const int32_t> tokens, int32_t n_computed) override;

  // --- sharing and release -------------------------------------------------
  // `child` (must not exist) shares every block of `parent`; the next append
  // to either side copies a shared partial last block (copy-on-write).
  void fork(SeqId parent, SeqId child);
  // Releases the seq's blocks (refcount −1; cached ones stay reusable).
  void free(SeqId seq) override;

  bool has_seq(SeqId seq) const;
  int32_t seq_tokens(SeqId seq) const;  // positions reserved
  // [blocks_for(seq_tokens)] blocks of `group` in position order, kNoBlock
  // where a window released (or never needed) one; valid until the next call
  // that changes this seq (append may replace the last block).
  std::span<const BlockId> block_table(SeqId seq, int32_t group = 0) const;
  // Blocks the seq holds now, all groups (a shared block counts for each owner).
  int32_t seq_blocks(SeqId seq) const;
  int32_t refcount(BlockId block) const;

  const PrefixCacheStats& prefix_stats() const;
  bool prefix_cache_enabled() const { return prefix_enabled_; }

  // Context shift, the metadata half (block_manager_shift.cpp; kv_shift.h
  // re-rotates the K rows): removes table entries [keep_blocks, keep_blocks +
  // drop_blocks) of `seq`, releasing their blocks, so every later position
  // moves drop_blocks * block_size down. One layer group only. A moved block
  // that another owner shares is replaced by a private copy (in
  // take_pending_copies, to run before the rotation); a moved block the
  // prefix cache indexes loses its entry (its K is about to change). The seq
  // keeps the entries of its kept blocks and registers no more: its later
  // K depends on the dropped tokens, which no prompt of its tokens holds.
  void shift(SeqId seq, int32_t keep_blocks, int32_t drop_blocks);

  // Drops the prefix-cache entries of the leading whole blocks of `tokens`
  // that no sequence holds (llama-server's slot erase), so no later prompt
  // reuses them; a block a sequence holds keeps its entry. Returns the
  // tokens whose blocks were dropped.
  int32_t forget_prefix(std::span<const int32_t> tokens);

  // --- for a lower tier (the disk) ----------------------------------------------
  // A group-0 entry registered by mark_computed: the block now provably holds
  // the K/V of tokens [0, (depth + 1) * block_size) of `seq`.
  struct NewEntry {
    SeqId seq;
    BlockId block;
    int32_t depth;
    uint64_t hash;  // PrefixCache::chain_hash chained from kRootHash
  };
  // Starts recording NewEntry for take_new_entries (off by default: nobody
  // would take them).
  void record_new_entries() { record_new_ = true; }
  std::vector<NewEntry> take_new_entries();

 private:
  struct GroupTable {
    // [blocks_for(n_tokens)] block of each block_size positions; kNoBlock
    // below `held_from` in a windowed group.
    std::vector<BlockId> table;
    int32_t held_from = 0;  // first table index that may hold a block
    // Prefix-cache entries of this seq's leading full computed blocks, one
    // per block, in order. An entry may name another block holding the same
    // tokens (when that one was registered first); in group 0 it is the
    // parent the seq's next full block registers under, in other groups only
    // its count matters (entries outside a reused window are placeholders).
    std::vector<PrefixEntryRef> chain;
  };
  struct Seq {
    int32_t n_tokens = 0;            // positions reserved
    std::vector<GroupTable> groups;  // [n_groups]
    bool registers = true;           // false after a context shift (shift())
  };
  // What allocate() would reuse: `depth` cached blocks, and per group the
  // chain entries of those depths (placeholders where a window skips them).
  struct Reuse {
    int32_t depth = 0;
    std::vector<std::vector<PrefixEntryRef>> chains;  // [n_groups][depth]
  };

  Seq& seq_state(SeqId seq, const char* what);
  const Seq& seq_state(SeqId seq, const char* what) const;
  void check_new_seq(SeqId seq, const char* what) const;
  void check_tokens(std::span<const int32_t> tokens, int32_t n_tokens, const char* what) const;
  // First table index of `group` a query at position `pos` reads.
  int32_t first_needed_block(int32_t group, int64_t pos) const;
  // Cached blocks allocate() would reuse for the first n_tokens of `tokens`.
  Reuse reusable(std::span<const int32_t> tokens, int32_t n_tokens,
                 int32_t max_reused = INT32_MAX) const;
  // Can the other groups serve a reuse of `depth` blocks anchored on `primary`?
  // Fills `chains` (groups ≥ 1) when they can.
  bool other_groups_cached(std::span<const int32_t> tokens,
                           const std::vector<PrefixEntryRef>& primary, int32_t depth,
                           std::vector<std::vector<PrefixEntryRef>>& chains) const;
  // Blocks allocate() would take from the free pool: fresh ones plus cached
  // ones that sit in it (refcount 0).
  int32_t blocks_taken_by_allocate(const Reuse& reuse, int32_t n_tokens) const;
  int64_t blocks_needed_to_append(const Seq& s, int32_t n) const;
  void register_computed(SeqId seq, Seq& s, std::span<const int32_t> tokens, int32_t n_computed);
  void release_outside_windows(Seq& s, int32_t n_computed);
  // A free block for new content: a never-cached one if any, else the least
  // recently released cached one (evicting its entry). Refcount becomes 1.
  BlockId take_free_block();
  void acquire(BlockId block);  // one more owner (refcount +1)
  void release(BlockId block);  // one owner less; at 0 the block rejoins the free pool

  int32_t n_blocks_;
  int32_t block_size_;
  bool prefix_enabled_;
  std::vector<int32_t> group_windows_;  // [n_groups] 0 = full attention
  std::vector<int32_t> refcount_;       // [n_blocks]
  std::vector<BlockId> free_list_;      // never-cached free blocks; the back is handed out first
  std::unordered_map<SeqId, Seq> seqs_;
  std::vector<BlockCopy> pending_copies_;
  bool record_new_ = false;
  std::vector<NewEntry> new_entries_;
  std::optional<PrefixCache> prefix_;  // entries and evictable blocks; empty when disabled
  PrefixCacheStats stats_;
};

}  // namespace kvforge
