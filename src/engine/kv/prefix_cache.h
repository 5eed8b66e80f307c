// The prefix cache's bookkeeping, used by BlockManager: which full blocks
// hold the K/V of which token prefix, and in which order the unused ones
// are evicted. Metadata only; it knows nothing of refcounts or sequences.
//
// An entry describes one full block at depth i (positions [i*B, (i+1)*B)):
// its own B token ids, its parent entry (the block at depth i-1, or none at
// depth 0) and a hash chained from the parent's hash and the token ids, so
// equal hashes name (almost surely) equal whole prefixes.
//
// A hit is proven, not trusted to the hash: a candidate must have the
// looked-up token ids AND be registered under exactly the parent entry the
// walk matched one level up. Parents are named by (block, serial), the serial
// being unique per registration, so an entry whose parent block has since
// been evicted and reused can never match again. By induction from depth 0
// a matched chain holds exactly the looked-up tokens, whatever the hash
// function does (the tests use a constant hash to prove it).
//
// Evictable entries (blocks no sequence holds) sit in an LRU list, oldest
// release first; BlockManager evicts from its front.
//
// Layer groups (kv_layer_groups.h): every entry belongs to one group of the
// pool's layers. Group 0 chains as above. An entry of another group at depth
// i is registered under group 0's entry at depth i (its "anchor") instead of
// its own parent: the anchor proves the whole prefix [0, (i+1)*B), so a
// windowed group's block can be matched while that group's older blocks are
// long gone, which is all a window needs. find() only returns an entry of
// the group asked for.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace kvforge {

using BlockId = int32_t;  // as in block_manager.h, which includes this header

// A registered entry, as a sequence remembers the chain it matched or wrote.
struct PrefixEntryRef {
  BlockId block = -1;
  uint64_t serial = 0;  // unique per registration; 0 never names an entry
  uint64_t hash = 0;    // chained hash of the whole prefix up to this block
};

class PrefixCache {
 public:
  // (parent hash, this block's token ids) → this block's chained hash.
  using HashFn = uint64_t (*)(uint64_t parent_hash, std::span<const int32_t> tokens);
  static uint64_t chain_hash(uint64_t parent_hash, std::span<const int32_t> tokens);
  // The parent hash of a depth-0 block.
  static constexpr uint64_t kRootHash = 0x6b76666f72676521ull;

  // block_size tokens per entry; entries name blocks in [0, n_blocks).
  PrefixCache(int32_t n_blocks, int32_t block_size, HashFn hash = &chain_hash);

  // The entry of `group` holding `tokens` (block_size ids) under `parent`
  // (nullptr at depth 0 of group 0; the anchor in other groups), if any. A
  // stale parent (evicted since) matches nothing.
  const PrefixEntryRef* find(const PrefixEntryRef* parent, std::span<const int32_t> tokens,
                             int32_t group = 0) const;
  // Longest chain of group 0's entries holding tokens[0, max_blocks * block_size), from depth 0.
  std::vector<PrefixEntryRef> match(std::span<const int32_t> tokens, int32_t max_blocks) const;
  // Registers `block` (which must have no entry) as holding `tokens` of
  // `group` after `parent`; the parent must be live (and given, outside group 0).
  PrefixEntryRef insert(BlockId block, const PrefixEntryRef* parent,
                        std::span<const int32_t> tokens, int32_t group = 0);
  // Forgets the block's entry (it is about to hold other content).
  void erase(BlockId block);

  bool has_entry(BlockId block) const { return entries_[size_t(block)].ref.serial != 0; }
  // Is `ref` still the block's current registration?
  bool is_live(const PrefixEntryRef& ref) const;
  int32_t n_entries() const { return int32_t(by_hash_.size()); }

  // --- LRU of evictable entries (blocks with an entry that nobody holds) ---
  void push_evictable(BlockId block);    // becomes the most recently released
  void remove_evictable(BlockId block);  // taken back into use
  bool is_evictable(BlockId block) const { return lru_[size_t(block)].linked; }
  int32_t n_evictable() const { return n_evictable_; }
  // The least recently released evictable block; -1 when there is none.
  BlockId oldest_evictable() const { return lru_head_; }

 private:
  struct Entry {
    PrefixEntryRef ref;           // serial 0: no entry
    PrefixEntryRef parent;        // block -1 at depth 0 of group 0; the anchor in other groups
    int32_t group = 0;            // layer group whose K/V the block holds
    std::vector<int32_t> tokens;  // [block_size] token ids
  };
  struct LruLink {
    BlockId prev = -1, next = -1;
    bool linked = false;
  };
  void check_block(BlockId block, const char* what) const;
  uint64_t hash_of(const PrefixEntryRef* parent, std::span<const int32_t> tokens,
                   int32_t group) const;

  int32_t block_size_;
  HashFn hash_;
  uint64_t next_serial_ = 1;
  std::vector<Entry> entries_;                          // [n_blocks]
  std::unordered_multimap<uint64_t, BlockId> by_hash_;  // chained hash → block
  std::vector<LruLink> lru_;                            // [n_blocks]
  BlockId lru_head_ = -1, lru_tail_ = -1;               // oldest, newest
  int32_t n_evictable_ = 0;
};

}  // namespace kvforge
