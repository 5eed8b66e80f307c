#include "engine/kv/disk_prefix_tier.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace kvforge {

DiskPrefixTier::DiskPrefixTier(KvDiskTier& disk, BlockManager& blocks, PagedKvCache& cache)
    : disk_(disk),
      blocks_(blocks),
      cache_(cache),
      block_size_(blocks.block_size()),
      loader_(disk, cache, disk.read_mode()) {
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

void DiskPrefixTier::start_load(SeqId seq, std::span<const int32_t> tokens, int32_t from_block,
                                int32_t n, int32_t eligible) {
  PrefixLoadJob job;
  job.seq = seq;
  job.from_block = from_block;
  job.eligible = eligible;
  const std::vector<uint64_t> h = hashes(tokens, from_block + n);
  job.hashes.assign(h.begin() + from_block, h.end());
  job.tokens.assign(tokens.begin(), tokens.begin() + size_t(from_block + n) * size_t(block_size_));
  const std::span<const BlockId> table = blocks_.block_table(seq, 0);
  if (table.size() < size_t(from_block + n))
    throw std::logic_error("DiskPrefixTier::start_load: sequence " + std::to_string(seq) +
                           " holds " + std::to_string(table.size()) + " blocks, " +
                           std::to_string(from_block + n) + " needed");
  job.dst.assign(table.begin() + from_block, table.begin() + from_block + n);
  loader_.submit(std::move(job));
}

std::vector<LoadedPrefix> DiskPrefixTier::take_loaded(bool wait) {
  std::vector<LoadedPrefix> out;
  for (const PrefixLoadResult& r : loader_.take(wait)) {
    int32_t good = 0;
    for (size_t i = 0; i < r.reads.size(); ++i)
      if (disk_.note_read(r.hashes[i], r.reads[i])) ++good;
    disk_.note_misses(r.eligible - good);
    out.push_back({r.seq, good});
  }
  return out;
}

void DiskPrefixTier::cancel_load(SeqId seq) { loader_.cancel(seq); }

void DiskPrefixTier::store_computed(std::span<const ComputedRun> runs) {
  for (const BlockManager::NewEntry& e : blocks_.take_new_entries()) {
    if (!disk_.enabled() || disk_.contains(e.hash)) continue;
    const auto run = std::find_if(runs.begin(), runs.end(),
                                  [&](const ComputedRun& r) { return r.seq == e.seq; });
    if (run == runs.end())
      throw std::logic_error("DiskPrefixTier: a block of sequence " + std::to_string(e.seq) +
                             " was cached outside this step");
    store(e, run->tokens);
  }
}

void DiskPrefixTier::store(const BlockManager::NewEntry& e, std::span<const int32_t> tokens) {
  const size_t n_tokens = size_t(e.depth + 1) * size_t(block_size_);
  if (tokens.size() < n_tokens)
    throw std::logic_error("DiskPrefixTier: sequence " + std::to_string(e.seq) + " has " +
                           std::to_string(tokens.size()) + " tokens, its block at depth " +
                           std::to_string(e.depth) + " covers " + std::to_string(n_tokens));
  cache_.export_block(e.block, out_);
  disk_.store(e.hash, tokens.first(n_tokens), out_);
}

}  // namespace kvforge
