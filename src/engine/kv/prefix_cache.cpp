#include "engine/kv/prefix_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kvforge {
namespace {

// splitmix64's finaliser: every input bit reaches every output bit.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t PrefixCache::chain_hash(uint64_t parent_hash, std::span<const int32_t> tokens) {
  uint64_t h = mix(parent_hash ^ uint64_t(tokens.size()));
  for (const int32_t t : tokens) h = mix(h ^ uint64_t(uint32_t(t)));
  return h;
}

PrefixCache::PrefixCache(int32_t n_blocks, int32_t block_size, HashFn hash)
    : block_size_(block_size), hash_(hash), entries_(size_t(n_blocks)), lru_(size_t(n_blocks)) {
  if (n_blocks < 1 || block_size < 1)
    throw std::invalid_argument("PrefixCache: n_blocks " + std::to_string(n_blocks) +
                                " and block_size " + std::to_string(block_size) +
                                " must be positive");
}

void PrefixCache::check_block(BlockId block, const char* what) const {
  if (block < 0 || size_t(block) >= entries_.size())
    throw std::out_of_range(std::string("PrefixCache::") + what + ": block " +
                            std::to_string(block) + " outside [0, " +
                            std::to_string(entries_.size()) + ")");
}

bool PrefixCache::is_live(const PrefixEntryRef& ref) const {
  return ref.block >= 0 && size_t(ref.block) < entries_.size() && ref.serial != 0 &&
         entries_[size_t(ref.block)].ref.serial == ref.serial;
}

uint64_t PrefixCache::hash_of(const PrefixEntryRef* parent, std::span<const int32_t> tokens,
                              int32_t group) const {
  // Group 0 hashes as it did before groups existed; other groups salt the
  // parent hash so their entries do not pile onto group 0's hash buckets.
  const uint64_t parent_hash = parent ? parent->hash : kRootHash;
  return hash_(group == 0 ? parent_hash : mix(parent_hash ^ uint64_t(group)), tokens);
}

const PrefixEntryRef* PrefixCache::find(const PrefixEntryRef* parent,
                                        std::span<const int32_t> tokens, int32_t group) const {
  if (tokens.size() != size_t(block_size_)) return nullptr;
  if (parent && !is_live(*parent)) return nullptr;
  const uint64_t h = hash_of(parent, tokens, group);
  const auto [first, last] = by_hash_.equal_range(h);
  for (auto it = first; it != last; ++it) {
    const Entry& e = entries_[size_t(it->second)];
    const bool same_parent =
        parent ? (e.parent.block == parent->block && e.parent.serial == parent->serial)
               : e.parent.block < 0;
    if (same_parent && e.group == group &&
        std::equal(tokens.begin(), tokens.end(), e.tokens.begin(), e.tokens.end()))
      return &e.ref;
  }
  return nullptr;
}

std::vector<PrefixEntryRef> PrefixCache::match(std::span<const int32_t> tokens,
                                               int32_t max_blocks) const {
  std::vector<PrefixEntryRef> chain;
  const int32_t n = std::min<int32_t>(max_blocks, int32_t(tokens.size() / size_t(block_size_)));
  for (int32_t i = 0; i < n; ++i) {
    const PrefixEntryRef* hit =
        find(chain.empty() ? nullptr : &chain.back(),
             tokens.subspan(size_t(i) * size_t(block_size_), size_t(block_size_)));
    if (!hit) break;
    chain.push_back(*hit);
  }
  return chain;
}

PrefixEntryRef PrefixCache::insert(BlockId block, const PrefixEntryRef* parent,
                                   std::span<const int32_t> tokens, int32_t group) {
  check_block(block, "insert");
  if (has_entry(block))
    throw std::logic_error("PrefixCache::insert: block " + std::to_string(block) +
                           " already has an entry");
  if (tokens.size() != size_t(block_size_))
    throw std::invalid_argument("PrefixCache::insert: block " + std::to_string(block) + " given " +
                                std::to_string(tokens.size()) + " token ids, expected " +
                                std::to_string(block_size_));
  if (group != 0 && !parent)
    throw std::logic_error("PrefixCache::insert: block " + std::to_string(block) + " of group " +
                           std::to_string(group) + " has no anchor in group 0");
  if (parent && !is_live(*parent))
    throw std::logic_error("PrefixCache::insert: parent block " + std::to_string(parent->block) +
                           " of block " + std::to_string(block) + " is no longer cached");
  Entry& e = entries_[size_t(block)];
  e.ref = {block, next_serial_++, hash_of(parent, tokens, group)};
  e.parent = parent ? *parent : PrefixEntryRef{};
  e.group = group;
  e.tokens.assign(tokens.begin(), tokens.end());
  by_hash_.emplace(e.ref.hash, block);
  return e.ref;
}

void PrefixCache::erase(BlockId block) {
  check_block(block, "erase");
  Entry& e = entries_[size_t(block)];
  if (e.ref.serial == 0) return;
  if (is_evictable(block)) remove_evictable(block);
  const auto [first, last] = by_hash_.equal_range(e.ref.hash);
  for (auto it = first; it != last; ++it) {
    if (it->second == block) {
      by_hash_.erase(it);
      break;
    }
  }
  e = Entry{};
}

void PrefixCache::push_evictable(BlockId block) {
  check_block(block, "push_evictable");
  if (!has_entry(block))
    throw std::logic_error("PrefixCache: block " + std::to_string(block) +
                           " has no entry, so it cannot be evictable");
  LruLink& l = lru_[size_t(block)];
  if (l.linked)
    throw std::logic_error("PrefixCache: block " + std::to_string(block) + " is already evictable");
  l = {lru_tail_, -1, true};
  if (lru_tail_ >= 0)
    lru_[size_t(lru_tail_)].next = block;
  else
    lru_head_ = block;
  lru_tail_ = block;
  ++n_evictable_;
}

void PrefixCache::remove_evictable(BlockId block) {
  check_block(block, "remove_evictable");
  LruLink& l = lru_[size_t(block)];
  if (!l.linked)
    throw std::logic_error("PrefixCache: block " + std::to_string(block) + " is not evictable");
  if (l.prev >= 0)
    lru_[size_t(l.prev)].next = l.next;
  else
    lru_head_ = l.next;
  if (l.next >= 0)
    lru_[size_t(l.next)].prev = l.prev;
  else
    lru_tail_ = l.prev;
  l = LruLink{};
  --n_evictable_;
}

}  // namespace kvforge
