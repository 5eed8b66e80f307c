#include "engine/kv/block_manager.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace kvforge {
namespace {

std::string seq_name(SeqId seq) { return "sequence " + std::to_string(seq); }

}  // namespace

BlockManager::BlockManager(int32_t n_blocks, int32_t block_size, bool enable_prefix_cache,
                           std::vector<int32_t> group_windows)
    : n_blocks_(n_blocks),
      block_size_(block_size),
      prefix_enabled_(enable_prefix_cache),
      group_windows_(std::move(group_windows)) {
  if (block_size < 1 || block_size > 256 || (block_size & (block_size - 1)) != 0)
    throw std::invalid_argument("BlockManager: block_size " + std::to_string(block_size) +
                                " is not a power of two in [1, 256]");
  if (n_blocks < 1)
    throw std::invalid_argument("BlockManager: n_blocks " + std::to_string(n_blocks) +
                                " must be at least 1");
  if (group_windows_.empty())
    throw std::invalid_argument("BlockManager: at least one layer group is needed");
  for (size_t g = 0; g < group_windows_.size(); ++g) {
    if (group_windows_[g] < 0)
      throw std::invalid_argument("BlockManager: group " + std::to_string(g) + " has window " +
                                  std::to_string(group_windows_[g]));
    if (g > 0 && group_windows_[g] == 0 && group_windows_[0] > 0)
      throw std::invalid_argument("BlockManager: full-attention group " + std::to_string(g) +
                                  " after windowed group 0 (full groups come first)");
  }
  refcount_.assign(size_t(n_blocks), 0);
  free_list_.reserve(size_t(n_blocks));
  for (BlockId b = n_blocks - 1; b >= 0; --b) free_list_.push_back(b);  // block 0 first
  if (prefix_enabled_) prefix_.emplace(n_blocks, block_size);
}

int32_t BlockManager::block_size() const { return block_size_; }
int32_t BlockManager::n_blocks() const { return n_blocks_; }

int32_t BlockManager::n_free_blocks() const {
  return int32_t(free_list_.size()) + (prefix_ ? prefix_->n_evictable() : 0);
}

int32_t BlockManager::blocks_for(int32_t n_tokens) const {
  if (n_tokens < 0)
    throw std::invalid_argument("BlockManager::blocks_for: negative token count " +
                                std::to_string(n_tokens));
  return int32_t((int64_t(n_tokens) + block_size_ - 1) / block_size_);
}

int32_t BlockManager::n_groups() const { return int32_t(group_windows_.size()); }

int32_t BlockManager::group_window(int32_t group) const {
  if (group < 0 || group >= n_groups())
    throw std::out_of_range("BlockManager::group_window: group " + std::to_string(group) +
                            " outside [0, " + std::to_string(n_groups()) + ")");
  return group_windows_[size_t(group)];
}

int32_t BlockManager::first_needed_block(int32_t group, int64_t pos) const {
  const int32_t w = group_windows_[size_t(group)];
  if (w == 0) return 0;
  return int32_t(std::max<int64_t>(0, pos - w + 1) / block_size_);
}

int64_t BlockManager::max_blocks_for_seq(int64_t n_tokens, int32_t chunk) const {
  return max_blocks_for_seq(group_windows_, block_size_, n_tokens, chunk);
}

int64_t BlockManager::max_blocks_for_seq(const std::vector<int32_t>& group_windows,
                                         int32_t block_size, int64_t n_tokens, int32_t chunk) {
  if (n_tokens < 0 || chunk < 1 || block_size < 1)
    throw std::invalid_argument("BlockManager::max_blocks_for_seq: " + std::to_string(n_tokens) +
                                " tokens in chunks of " + std::to_string(chunk) + ", blocks of " +
                                std::to_string(block_size));
  const int64_t block_size_ = block_size;
  const int64_t all = (n_tokens + block_size_ - 1) / block_size_;
  int64_t total = 0;
  for (const int32_t w : group_windows) {
    // Worst case: the step that computes positions [p, p + chunk) holds the
    // blocks from the one holding p - W + 1 to the one holding p + chunk - 1,
    // block-misaligned at both ends.
    const int64_t windowed = (int64_t(w) - 1 + chunk + block_size_ - 1) / block_size_ + 1;
    total += w == 0 ? all : std::min(all, windowed);
  }
  return total;
}

// --- state access and argument checks ---------------------------------------

BlockManager::Seq& BlockManager::seq_state(SeqId seq, const char* what) {
  return const_cast<Seq&>(std::as_const(*this).seq_state(seq, what));
}

const BlockManager::Seq& BlockManager::seq_state(SeqId seq, const char* what) const {
  const auto it = seqs_.find(seq);
  if (it == seqs_.end())
    throw std::invalid_argument(std::string("BlockManager::") + what + ": " + seq_name(seq) +
                                " does not exist");
  return it->second;
}

void BlockManager::check_new_seq(SeqId seq, const char* what) const {
  if (seqs_.count(seq))
    throw std::invalid_argument(std::string("BlockManager::") + what + ": " + seq_name(seq) +
                                " already exists");
}

void BlockManager::check_tokens(std::span<const int32_t> tokens, int32_t n_tokens,
                                const char* what) const {
  if (n_tokens < 0 || size_t(n_tokens) > tokens.size())
    throw std::invalid_argument(std::string("BlockManager::") + what + ": n_tokens " +
                                std::to_string(n_tokens) + " outside [0, " +
                                std::to_string(tokens.size()) + "] (the token ids given)");
}

bool BlockManager::has_seq(SeqId seq) const { return seqs_.count(seq) != 0; }

int32_t BlockManager::seq_tokens(SeqId seq) const { return seq_state(seq, "seq_tokens").n_tokens; }

std::span<const BlockId> BlockManager::block_table(SeqId seq, int32_t group) const {
  const Seq& s = seq_state(seq, "block_table");
  if (group < 0 || group >= n_groups())
    throw std::out_of_range("BlockManager::block_table: group " + std::to_string(group) +
                            " outside [0, " + std::to_string(n_groups()) + ")");
  return s.groups[size_t(group)].table;
}

int32_t BlockManager::seq_blocks(SeqId seq) const {
  int32_t n = 0;
  for (const GroupTable& g : seq_state(seq, "seq_blocks").groups)
    n += int32_t(
        std::count_if(g.table.begin(), g.table.end(), [](BlockId b) { return b != kNoBlock; }));
  return n;
}

int32_t BlockManager::refcount(BlockId block) const {
  if (block < 0 || block >= n_blocks_)
    throw std::out_of_range("BlockManager::refcount: block " + std::to_string(block) +
                            " outside [0, " + std::to_string(n_blocks_) + ")");
  return refcount_[size_t(block)];
}

const PrefixCacheStats& BlockManager::prefix_stats() const { return stats_; }

// --- block pool ---------------------------------------------------------------

BlockId BlockManager::take_free_block() {
  BlockId b;
  if (!free_list_.empty()) {
    b = free_list_.back();
    free_list_.pop_back();
  } else if (prefix_ && prefix_->n_evictable() > 0) {
    b = prefix_->oldest_evictable();
    prefix_->erase(b);  // also unlinks it from the LRU
    ++stats_.evictions;
  } else {
    throw std::logic_error("BlockManager: no free block (internal: a can_* check was skipped)");
  }
  refcount_[size_t(b)] = 1;
  return b;
}

void BlockManager::acquire(BlockId block) {
  int32_t& rc = refcount_[size_t(block)];
  if (rc == 0) {
    // Only cached blocks are reused from the free pool by identity.
    if (!prefix_ || !prefix_->is_evictable(block))
      throw std::logic_error("BlockManager: block " + std::to_string(block) +
                             " is free and not cached, it cannot gain an owner");
    prefix_->remove_evictable(block);
  }
  ++rc;
}

int32_t BlockManager::forget_prefix(std::span<const int32_t> tokens) {
  if (!prefix_) return 0;
  int32_t forgotten = 0;
  // Until a match finds nothing more to drop: a chain cut at a held block
  // may go on in another (registered under that block's twin).
  for (int32_t round = -1; round != 0; forgotten += round) {
    round = 0;
    for (const PrefixEntryRef& e : prefix_->match(tokens, int32_t(tokens.size()) / block_size_)) {
      if (refcount_[size_t(e.block)] != 0) continue;
      prefix_->erase(e.block);  // also unlinks it from the LRU
      free_list_.push_back(e.block);
      round += block_size_;
    }
  }
  return forgotten;
}

void BlockManager::release(BlockId block) {
  int32_t& rc = refcount_[size_t(block)];
  if (rc <= 0)
    throw std::logic_error("BlockManager: block " + std::to_string(block) +
                           " released with refcount " + std::to_string(rc));
  if (--rc > 0) return;
  // A copy into a block nobody holds any more is pointless, and the block
  // may be handed out again before the copy runs.
  std::erase_if(pending_copies_, [block](const BlockCopy& c) { return c.dst == block; });
  if (prefix_ && prefix_->has_entry(block))
    prefix_->push_evictable(block);
  else
    free_list_.push_back(block);
}

// --- admission ------------------------------------------------------------------

bool BlockManager::other_groups_cached(std::span<const int32_t> tokens,
                                       const std::vector<PrefixEntryRef>& primary, int32_t depth,
                                       std::vector<std::vector<PrefixEntryRef>>& chains) const {
  const size_t bs = size_t(block_size_);
  for (int32_t g = 1; g < n_groups(); ++g) {
    std::vector<PrefixEntryRef>& chain = chains[size_t(g)];
    chain.assign(size_t(depth), PrefixEntryRef{});
    for (int32_t i = first_needed_block(g, int64_t(depth) * block_size_); i < depth; ++i) {
      const PrefixEntryRef* e = prefix_->find(&primary[size_t(i)], tokens.subspan(i * bs, bs), g);
      if (!e) return false;
      chain[size_t(i)] = *e;
    }
  }
  return true;
}

BlockManager::Reuse BlockManager::reusable(std::span<const int32_t> tokens, int32_t n_tokens,
                                           int32_t max_reused) const {
  Reuse r;
  r.chains.resize(size_t(n_groups()));
  if (!prefix_ || tokens.empty()) return r;
  // At least one token is computed (its logits are needed), and only whole
  // blocks inside the first n_tokens are reused.
  const int32_t max_blocks = std::min<int32_t>({int32_t((tokens.size() - 1) / size_t(block_size_)),
                                                n_tokens / block_size_, max_reused / block_size_});
  std::vector<PrefixEntryRef> primary = prefix_->match(tokens, max_blocks);
  // A windowed group may have lost blocks a shorter reuse would need and
  // kept the ones a longer one needs: try every depth, longest first.
  for (int32_t d = int32_t(primary.size()); d > 0; --d) {
    if (!other_groups_cached(tokens, primary, d, r.chains)) continue;
    primary.resize(size_t(d));
    r.chains[0] = std::move(primary);
    r.depth = d;
    return r;
  }
  for (auto& c : r.chains) c.clear();
  return r;
}

int32_t BlockManager::blocks_taken_by_allocate(const Reuse& reuse, int32_t n_tokens) const {
  const int32_t end = blocks_for(n_tokens);
  int32_t taken = 0;
  for (int32_t g = 0; g < n_groups(); ++g)
    for (int32_t i = first_needed_block(g, int64_t(reuse.depth) * block_size_); i < end; ++i)
      taken += i >= reuse.depth || refcount_[size_t(reuse.chains[size_t(g)][size_t(i)].block)] == 0
                   ? 1
                   : 0;
  return taken;
}

int32_t BlockManager::cached_prefix(std::span<const int32_t> tokens) const {
  return reusable(tokens, int32_t(tokens.size())).depth * block_size_;
}

bool BlockManager::can_allocate(std::span<const int32_t> tokens, int32_t n_tokens,
                                int32_t max_reused) const {
  check_tokens(tokens, n_tokens, "can_allocate");
  return blocks_taken_by_allocate(reusable(tokens, n_tokens, max_reused), n_tokens) <=
         n_free_blocks();
}

int32_t BlockManager::allocate(SeqId seq, std::span<const int32_t> tokens, int32_t n_tokens,
                               int32_t max_reused, bool counted) {
  check_new_seq(seq, "allocate");
  check_tokens(tokens, n_tokens, "allocate");
  Reuse reuse = reusable(tokens, n_tokens, max_reused);
  const int32_t taken = blocks_taken_by_allocate(reuse, n_tokens);
  if (taken > n_free_blocks())
    throw std::logic_error("BlockManager::allocate: " + seq_name(seq) + " with " +
                           std::to_string(n_tokens) + " tokens needs " + std::to_string(taken) +
                           " free blocks, " + std::to_string(n_free_blocks()) + " free");
  const int32_t reused = reuse.depth * block_size_;
  Seq s;
  s.n_tokens = n_tokens;
  s.groups.resize(size_t(n_groups()));
  // Cached blocks first, in every group: taking fresh ones may evict, and
  // must not evict these.
  for (int32_t g = 0; g < n_groups(); ++g) {
    GroupTable& t = s.groups[size_t(g)];
    t.held_from = first_needed_block(g, reused);
    t.table.assign(size_t(blocks_for(n_tokens)), kNoBlock);
    for (int32_t i = t.held_from; i < reuse.depth; ++i) {
      const BlockId b = reuse.chains[size_t(g)][size_t(i)].block;
      acquire(b);
      t.table[size_t(i)] = b;
    }
  }
  for (GroupTable& t : s.groups)
    for (size_t i = size_t(std::max(t.held_from, reuse.depth)); i < t.table.size(); ++i)
      t.table[i] = take_free_block();
  if (prefix_ && counted) {
    const int32_t eligible =
        tokens.empty() ? 0 : int32_t((tokens.size() - 1) / size_t(block_size_));
    stats_.hits += int64_t(reuse.depth);
    stats_.misses += int64_t(eligible) - int64_t(reuse.depth);
    stats_.tokens_reused += int64_t(reused);
  }
  for (int32_t g = 0; g < n_groups(); ++g)
    s.groups[size_t(g)].chain = std::move(reuse.chains[size_t(g)]);
  seqs_.emplace(seq, std::move(s));
  return reused;
}

// --- growth ---------------------------------------------------------------------

namespace {

// Must the last block of this table be copied before a new position is written?
bool needs_copy(const std::vector<BlockId>& table, int32_t n_tokens, int32_t block_size,
                const std::vector<int32_t>& refcount) {
  return n_tokens % block_size != 0 && !table.empty() && table.back() >= 0 &&
         refcount[size_t(table.back())] > 1;
}

}  // namespace

int64_t BlockManager::blocks_needed_to_append(const Seq& s, int32_t n) const {
  if (n == 0) return 0;
  int64_t needed = 0;
  const int64_t end = (int64_t(s.n_tokens) + n + block_size_ - 1) / block_size_;
  for (const GroupTable& t : s.groups)
    needed += end - int64_t(t.table.size()) +
              (needs_copy(t.table, s.n_tokens, block_size_, refcount_) ? 1 : 0);
  return needed;
}

bool BlockManager::can_append(SeqId seq, int32_t n) const {
  if (n < 0)
    throw std::invalid_argument("BlockManager::can_append: " + seq_name(seq) +
                                " asked for a negative count " + std::to_string(n));
  const Seq& s = seq_state(seq, "can_append");
  if (int64_t(s.n_tokens) + n > int64_t(INT32_MAX) - block_size_) return false;
  return blocks_needed_to_append(s, n) <= n_free_blocks();
}

void BlockManager::append(SeqId seq, int32_t n) {
  if (!can_append(seq, n)) {
    const Seq& s = seq_state(seq, "append");
    throw std::logic_error("BlockManager::append: " + seq_name(seq) + " (" +
                           std::to_string(s.n_tokens) + " tokens) cannot grow by " +
                           std::to_string(n) + ": needs " +
                           std::to_string(blocks_needed_to_append(s, n)) + " blocks, " +
                           std::to_string(n_free_blocks()) + " free");
  }
  if (n == 0) return;
  Seq& s = seq_state(seq, "append");
  for (GroupTable& t : s.groups) {
    if (needs_copy(t.table, s.n_tokens, block_size_, refcount_)) {
      // Copy-on-write: the other owners keep the original partial block.
      const BlockId shared = t.table.back();
      const BlockId copy = take_free_block();
      release(shared);
      t.table.back() = copy;
      pending_copies_.push_back({shared, copy});
    }
  }
  s.n_tokens += n;
  for (GroupTable& t : s.groups)
    while (int32_t(t.table.size()) < blocks_for(s.n_tokens)) t.table.push_back(take_free_block());
}

void BlockManager::truncate(SeqId seq, int32_t n_tokens) {
  Seq& s = seq_state(seq, "truncate");
  size_t registered = 0;
  for (const GroupTable& t : s.groups) registered = std::max(registered, t.chain.size());
  if (n_tokens < 0 || n_tokens > s.n_tokens ||
      int64_t(registered) * block_size_ > int64_t(n_tokens))
    throw std::invalid_argument("BlockManager::truncate: " + seq_name(seq) + " has " +
                                std::to_string(s.n_tokens) + " positions, " +
                                std::to_string(registered) + " registered full blocks; " +
                                std::to_string(n_tokens) + " tokens asked");
  const size_t keep = size_t(blocks_for(n_tokens));
  for (GroupTable& t : s.groups) {
    // Last block first, as free() does.
    while (t.table.size() > keep) {
      if (t.table.back() != kNoBlock) release(t.table.back());
      t.table.pop_back();
    }
    t.held_from = std::min(t.held_from, int32_t(keep));
  }
  s.n_tokens = n_tokens;
}

std::vector<BlockManager::NewEntry> BlockManager::take_new_entries() {
  std::vector<NewEntry> out;
  out.swap(new_entries_);
  return out;
}

std::vector<BlockCopy> BlockManager::take_pending_copies() {
  std::vector<BlockCopy> out;
  out.swap(pending_copies_);
  return out;
}

void BlockManager::mark_computed(SeqId seq, std::span<const int32_t> tokens, int32_t n_computed) {
  Seq& s = seq_state(seq, "mark_computed");
  if (n_computed < 0 || n_computed > s.n_tokens || size_t(n_computed) > tokens.size())
    throw std::invalid_argument("BlockManager::mark_computed: " + seq_name(seq) + " has " +
                                std::to_string(s.n_tokens) + " positions and " +
                                std::to_string(tokens.size()) + " token ids given; n_computed " +
                                std::to_string(n_computed) + " must be within both");
  // Registered before released: a released block of a cached prefix stays
  // reusable (evictable) until the pool needs it.
  if (prefix_ && s.registers) register_computed(seq, s, tokens, n_computed);
  release_outside_windows(s, n_computed);
}

void BlockManager::register_computed(SeqId seq, Seq& s, std::span<const int32_t> tokens,
                                     int32_t n_computed) {
  const size_t full = size_t(n_computed / block_size_);
  const size_t bs = size_t(block_size_);
  const std::vector<PrefixEntryRef>& primary = s.groups[0].chain;
  for (int32_t g = 0; g < n_groups(); ++g) {
    GroupTable& t = s.groups[size_t(g)];
    while (t.chain.size() < full) {
      const size_t i = t.chain.size();
      // Group 0 chains on its own last entry, the others on group 0's entry
      // of the same depth. That entry may have been evicted (it named another
      // seq's block that was released since): then the chain cannot grow.
      const PrefixEntryRef* parent = g == 0 ? (i == 0 ? nullptr : &t.chain.back())
                                            : (i < primary.size() ? &primary[i] : nullptr);
      if (g != 0 && !parent) break;
      if (parent && !prefix_->is_live(*parent)) break;
      const std::span<const int32_t> block_tokens = tokens.subspan(i * bs, bs);
      if (const PrefixEntryRef* existing = prefix_->find(parent, block_tokens, g)) {
        t.chain.push_back(*existing);  // same tokens already cached, maybe in another block
        continue;
      }
      const BlockId own = t.table[i];
      if (own == kNoBlock) break;          // released by the window before it could register
      if (prefix_->has_entry(own)) break;  // cached for other tokens: the caller's tokens disagree
      t.chain.push_back(prefix_->insert(own, parent, block_tokens, g));
      if (g == 0 && record_new_)
        new_entries_.push_back({seq, own, int32_t(i), t.chain.back().hash});
    }
  }
}

void BlockManager::release_outside_windows(Seq& s, int32_t n_computed) {
  for (int32_t g = 0; g < n_groups(); ++g) {
    if (group_windows_[size_t(g)] == 0) continue;
    GroupTable& t = s.groups[size_t(g)];
    const int32_t end = first_needed_block(g, n_computed);
    // Oldest first: they join the LRU (when cached) in the order they left the window.
    for (; t.held_from < end; ++t.held_from) {
      BlockId& b = t.table[size_t(t.held_from)];
      if (b != kNoBlock) release(b);
      b = kNoBlock;
    }
  }
}

// --- sharing and release ----------------------------------------------------------

void BlockManager::fork(SeqId parent, SeqId child) {
  check_new_seq(child, "fork");
  Seq copy = seq_state(parent, "fork");
  for (const GroupTable& t : copy.groups)
    for (const BlockId b : t.table)
      if (b != kNoBlock) acquire(b);
  seqs_.emplace(child, std::move(copy));
}

void BlockManager::free(SeqId seq) {
  Seq& s = seq_state(seq, "free");
  // Last block first: released cached blocks queue up in the LRU so a
  // prefix's tail is evicted before its head (a tail is useless without it).
  for (const GroupTable& t : s.groups)
    for (auto it = t.table.rbegin(); it != t.table.rend(); ++it)
      if (*it != kNoBlock) release(*it);
  seqs_.erase(seq);
}

}  // namespace kvforge
