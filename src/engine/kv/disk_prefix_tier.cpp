#include "engine/kv/disk_prefix_tier.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kvforge {

DiskPrefixTier::DiskPrefixTier(KvDiskTier& disk, BlockManager& blocks, PagedKvCache& cache,
                               HybridKvManager* hybrid, StateSnapshots* snapshots)
    : DiskTierReader(disk, blocks.block_size()),
      blocks_(blocks),
      cache_(cache),
      hybrid_(hybrid),
      snapshots_(snapshots) {
  if (with_states_ != (hybrid && snapshots) ||
      (hybrid && hybrid->states().bytes_per_slot() != disk.identity().state_bytes))
    throw std::invalid_argument(
        "DiskPrefixTier: the disk tier's snapshots (" +
        std::to_string(disk.identity().state_bytes) +
        " bytes) need a hybrid manager with state snapshots of that size, and only it");
  if (disk.identity().payload_bytes != cache.block_bytes() ||
      disk.identity().block_size != block_size_)
    throw std::invalid_argument(
        "DiskPrefixTier: the disk tier's blocks (" + std::to_string(disk.identity().payload_bytes) +
        " bytes, " + std::to_string(disk.identity().block_size) + " tokens) are not the pool's (" +
        std::to_string(cache.block_bytes()) + " bytes, " + std::to_string(block_size_) +
        " tokens)");
  blocks_.record_new_entries();
  if (snapshots_) snapshots_->record_finished();
  out_.resize(cache.block_bytes());
}

// The loader writes into staged_ and pool blocks: it stops before they go.
DiskPrefixTier::~DiskPrefixTier() {
  std::vector<SeqId> loading;
  for (const auto& [seq, bytes] : staged_) loading.push_back(seq);
  for (SeqId seq : loading) cancel_load(seq);
}

std::function<void(std::span<const uint8_t>)> DiskPrefixTier::state_destination(SeqId seq) {
  if (!hybrid_) return nullptr;
  std::vector<uint8_t>& into = staged_[seq];
  into.resize(size_t(disk_.identity().state_bytes));
  return [dst = into.data(), n = into.size()](std::span<const uint8_t> payload) {
    std::copy_n(payload.data(), std::min(n, payload.size()), dst);
  };
}

void DiskPrefixTier::landed(SeqId seq, int32_t from_block, int32_t good) {
  if (!hybrid_ || good == 0) return;
  hybrid_->restore_state(seq, staged_.at(seq), (from_block + good) * block_size_);
}

std::function<void(size_t, std::span<const uint8_t>)> DiskPrefixTier::destination(
    SeqId seq, int32_t from_block, int32_t n) {
  const std::span<const BlockId> table = blocks_.block_table(seq, 0);
  if (table.size() < size_t(from_block + n))
    throw std::logic_error("DiskPrefixTier::start_load: sequence " + std::to_string(seq) +
                           " holds " + std::to_string(table.size()) + " blocks, " +
                           std::to_string(from_block + n) + " needed");
  return [&cache = cache_,
          dst = std::vector<BlockId>(table.begin() + from_block, table.begin() + from_block + n)](
             size_t i, std::span<const uint8_t> payload) { cache.import_block(dst[i], payload); };
}

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
  if (snapshots_) store_states();
}

void DiskPrefixTier::store_states() {
  for (const int32_t entry : snapshots_->take_finished()) {
    const std::span<const int32_t> tokens = snapshots_->tokens(entry);
    const int32_t n_blocks = int32_t(tokens.size()) / block_size_;
    if (!disk_.enabled() || n_blocks == 0) continue;
    const uint64_t hash = hashes(tokens, n_blocks).back();
    if (!disk_.contains_state(hash)) disk_.store_state(hash, tokens, snapshots_->bytes_of(entry));
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
