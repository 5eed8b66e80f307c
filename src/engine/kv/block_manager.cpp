#include "engine/kv/block_manager.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace kvforge {
namespace {

std::string seq_name(SeqId seq) { return "sequence " + std::to_string(seq); }

}  // namespace

BlockManager::BlockManager(int32_t n_blocks, int32_t block_size, bool enable_prefix_cache)
    : n_blocks_(n_blocks), block_size_(block_size), prefix_enabled_(enable_prefix_cache) {
  if (block_size < 1 || block_size > 256 || (block_size & (block_size - 1)) != 0)
    throw std::invalid_argument("BlockManager: block_size " + std::to_string(block_size) +
                                " is not a power of two in [1, 256]");
  if (n_blocks < 1)
    throw std::invalid_argument("BlockManager: n_blocks " + std::to_string(n_blocks) +
                                " must be at least 1");
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

std::span<const BlockId> BlockManager::block_table(SeqId seq) const {
  return seq_state(seq, "block_table").table;
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

std::vector<PrefixEntryRef> BlockManager::reusable_chain(std::span<const int32_t> tokens,
                                                         int32_t n_tokens) const {
  if (!prefix_ || tokens.empty()) return {};
  // At least one token is computed (its logits are needed), and only whole
  // blocks inside the first n_tokens are reused.
  const int32_t max_blocks =
      std::min<int32_t>(int32_t((tokens.size() - 1) / size_t(block_size_)), n_tokens / block_size_);
  return prefix_->match(tokens, max_blocks);
}

int32_t BlockManager::blocks_taken_by_allocate(const std::vector<PrefixEntryRef>& chain,
                                               int32_t n_tokens) const {
  int32_t taken = blocks_for(n_tokens) - int32_t(chain.size());
  for (const PrefixEntryRef& e : chain) taken += refcount_[size_t(e.block)] == 0 ? 1 : 0;
  return taken;
}

int32_t BlockManager::cached_prefix(std::span<const int32_t> tokens) const {
  return int32_t(reusable_chain(tokens, int32_t(tokens.size())).size()) * block_size_;
}

bool BlockManager::can_allocate(std::span<const int32_t> tokens, int32_t n_tokens) const {
  check_tokens(tokens, n_tokens, "can_allocate");
  return blocks_taken_by_allocate(reusable_chain(tokens, n_tokens), n_tokens) <= n_free_blocks();
}

int32_t BlockManager::allocate(SeqId seq, std::span<const int32_t> tokens, int32_t n_tokens) {
  check_new_seq(seq, "allocate");
  check_tokens(tokens, n_tokens, "allocate");
  std::vector<PrefixEntryRef> chain = reusable_chain(tokens, n_tokens);
  const int32_t taken = blocks_taken_by_allocate(chain, n_tokens);
  if (taken > n_free_blocks())
    throw std::logic_error("BlockManager::allocate: " + seq_name(seq) + " with " +
                           std::to_string(n_tokens) + " tokens needs " + std::to_string(taken) +
                           " free blocks, " + std::to_string(n_free_blocks()) + " free");
  Seq s;
  s.n_tokens = n_tokens;
  s.table.reserve(size_t(blocks_for(n_tokens)));
  // Cached blocks first: taking fresh ones may evict, and must not evict these.
  for (const PrefixEntryRef& e : chain) {
    acquire(e.block);
    s.table.push_back(e.block);
  }
  while (int32_t(s.table.size()) < blocks_for(n_tokens)) s.table.push_back(take_free_block());
  if (prefix_) {
    const int32_t eligible =
        tokens.empty() ? 0 : int32_t((tokens.size() - 1) / size_t(block_size_));
    stats_.hits += int64_t(chain.size());
    stats_.misses += int64_t(eligible) - int64_t(chain.size());
    stats_.tokens_reused += int64_t(chain.size()) * block_size_;
  }
  const int32_t reused = int32_t(chain.size()) * block_size_;
  s.chain = std::move(chain);
  seqs_.emplace(seq, std::move(s));
  return reused;
}

// --- growth ---------------------------------------------------------------------

int32_t BlockManager::blocks_needed_to_append(const Seq& s, int32_t n) const {
  if (n == 0) return 0;
  const bool copy_last = s.n_tokens % block_size_ != 0 && refcount_[size_t(s.table.back())] > 1;
  return blocks_for(s.n_tokens + n) - int32_t(s.table.size()) + (copy_last ? 1 : 0);
}

bool BlockManager::can_append(SeqId seq, int32_t n) const {
  if (n < 0)
    throw std::invalid_argument("BlockManager::can_append: " + seq_name(seq) +
                                " asked for a negative count " + std::to_string(n));
  const Seq& s = seq_state(seq, "can_append");
  if (int64_t(s.n_tokens) + n > int64_t(n_blocks_) * block_size_) return false;
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
  if (s.n_tokens % block_size_ != 0 && refcount_[size_t(s.table.back())] > 1) {
    // Copy-on-write: the other owners keep the original partial block.
    const BlockId shared = s.table.back();
    const BlockId copy = take_free_block();
    release(shared);
    s.table.back() = copy;
    pending_copies_.push_back({shared, copy});
  }
  s.n_tokens += n;
  while (int32_t(s.table.size()) < blocks_for(s.n_tokens)) s.table.push_back(take_free_block());
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
  if (!prefix_) return;
  const size_t full = size_t(n_computed / block_size_);
  const size_t bs = size_t(block_size_);
  while (s.chain.size() < full) {
    const size_t i = s.chain.size();
    const PrefixEntryRef* parent = i == 0 ? nullptr : &s.chain.back();
    // The parent entry may have been evicted (it named another seq's block
    // that was released since): then the chain cannot grow any more.
    if (parent && !prefix_->is_live(*parent)) return;
    const std::span<const int32_t> block_tokens = tokens.subspan(i * bs, bs);
    if (const PrefixEntryRef* existing = prefix_->find(parent, block_tokens)) {
      s.chain.push_back(*existing);  // same tokens already cached, maybe in another block
      continue;
    }
    const BlockId own = s.table[i];
    if (prefix_->has_entry(own)) return;  // cached for other tokens: the caller's tokens disagree
    s.chain.push_back(prefix_->insert(own, parent, block_tokens));
  }
}

// --- sharing and release ----------------------------------------------------------

void BlockManager::fork(SeqId parent, SeqId child) {
  check_new_seq(child, "fork");
  Seq copy = seq_state(parent, "fork");
  for (const BlockId b : copy.table) acquire(b);
  seqs_.emplace(child, std::move(copy));
}

void BlockManager::free(SeqId seq) {
  Seq& s = seq_state(seq, "free");
  // Last block first: released cached blocks queue up in the LRU so a
  // prefix's tail is evicted before its head (a tail is useless without it).
  for (auto it = s.table.rbegin(); it != s.table.rend(); ++it) release(*it);
  seqs_.erase(seq);
}

}  // namespace kvforge
