#include "engine/kv/disk_prefix_tier.h"

#include <chrono>
#include <stdexcept>
#include <string>

namespace kvforge {

DiskPrefixTier::DiskPrefixTier(KvDiskTier& disk, BlockManager& blocks, PagedKvCache& cache)
    : disk_(disk), blocks_(blocks), cache_(cache), block_size_(blocks.block_size()) {
  if (disk.identity().payload_bytes != cache.block_bytes() ||
      disk.identity().block_size != block_size_)
    throw std::invalid_argument(
        "DiskPrefixTier: the disk tier's blocks (" + std::to_string(disk.identity().payload_bytes) +
        " bytes, " + std::to_string(disk.identity().block_size) + " tokens) are not the pool's (" +
        std::to_string(cache.block_bytes()) + " bytes, " + std::to_string(block_size_) +
        " tokens)");
  blocks_.record_new_entries();
  out_.resize(cache.block_bytes());
}

std::vector<uint64_t> DiskPrefixTier::hashes(std::span<const int32_t> tokens,
                                             int32_t n_blocks) const {
  std::vector<uint64_t> h(static_cast<size_t>(n_blocks));
  uint64_t parent = PrefixCache::kRootHash;
  const size_t bs = size_t(block_size_);
  for (int32_t i = 0; i < n_blocks; ++i)
    parent = h[size_t(i)] = PrefixCache::chain_hash(parent, tokens.subspan(size_t(i) * bs, bs));
  return h;
}

int32_t DiskPrefixTier::available(std::span<const int32_t> tokens, int32_t from_block,
                                  int32_t max_blocks) {
  if (!disk_.enabled() || max_blocks <= 0) return 0;
  const std::vector<uint64_t> h = hashes(tokens, from_block + max_blocks);
  int32_t n = 0;
  while (n < max_blocks && disk_.contains(h[size_t(from_block + n)])) ++n;
  return n;
}

int32_t DiskPrefixTier::fetch(std::span<const int32_t> tokens, int32_t from_block, int32_t n,
                              int32_t eligible) {
  n_staged_ = 0;
  if (n > 0) {
    const size_t bytes = cache_.block_bytes();
    const std::vector<uint64_t> h = hashes(tokens, from_block + n);
    staged_.resize(size_t(n) * bytes);
    for (; n_staged_ < n; ++n_staged_) {
      const int32_t depth = from_block + n_staged_;
      const std::span<const int32_t> prefix = tokens.first(size_t(depth + 1) * size_t(block_size_));
      const std::span<uint8_t> dst(staged_.data() + size_t(n_staged_) * bytes, bytes);
      if (!disk_.load(h[size_t(depth)], prefix, dst)) break;
    }
  }
  disk_.note_misses(eligible - n_staged_);
  return n_staged_;
}

void DiskPrefixTier::install(SeqId seq, int32_t from_block, int32_t n) {
  if (n > n_staged_)
    throw std::logic_error("DiskPrefixTier::install: " + std::to_string(n) + " blocks asked, " +
                           std::to_string(n_staged_) + " fetched");
  const size_t bytes = cache_.block_bytes();
  const std::span<const BlockId> table = blocks_.block_table(seq, 0);
  for (int32_t i = 0; i < n; ++i)
    cache_.import_block(table[size_t(from_block + i)],
                        std::span<const uint8_t>(staged_.data() + size_t(i) * bytes, bytes));
  n_staged_ = 0;
}

void DiskPrefixTier::store(const BlockManager::NewEntry& e, std::span<const int32_t> tokens) {
  if (!disk_.enabled() || disk_.contains(e.hash)) return;
  const size_t n_tokens = size_t(e.depth + 1) * size_t(block_size_);
  if (tokens.size() < n_tokens)
    throw std::logic_error("DiskPrefixTier: sequence " + std::to_string(e.seq) + " has " +
                           std::to_string(tokens.size()) + " tokens, its block at depth " +
                           std::to_string(e.depth) + " covers " + std::to_string(n_tokens));
  cache_.export_block(e.block, out_);
  disk_.store(e.hash, tokens.first(n_tokens), out_);
}

}  // namespace kvforge
