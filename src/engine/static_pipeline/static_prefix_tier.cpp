#include "engine/static_pipeline/static_prefix_tier.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/kv/prefix_cache.h"

namespace kvforge {

StaticPrefixTier::StaticPrefixTier(KvDiskTier& disk, StaticRunner& runner, StaticSlotManager& slots)
    : DiskTierReader(disk, disk.identity().block_size),
      runner_(runner),
      slots_(slots),
      block_bytes_(runner.cache().run_bytes(block_size_)) {
  if (block_bytes_ != disk.identity().payload_bytes)
    throw std::invalid_argument("StaticPrefixTier: a block of the static cache is " +
                                std::to_string(block_bytes_) + " bytes, the disk tier's " +
                                std::to_string(disk.identity().payload_bytes));
  out_.resize(block_bytes_);
}

StaticPrefixTier::~StaticPrefixTier() {
  while (!staged_.empty()) cancel_load(staged_.begin()->first);
}

std::function<void(size_t, std::span<const uint8_t>)> StaticPrefixTier::destination(SeqId seq,
                                                                                    int32_t,
                                                                                    int32_t n) {
  std::vector<uint8_t>& buffer = staged_[seq];
  buffer.resize(size_t(n) * block_bytes_);
  return [dst = buffer.data(), bytes = block_bytes_](size_t i, std::span<const uint8_t> payload) {
    std::memcpy(dst + i * bytes, payload.data(), bytes);
  };
}

void StaticPrefixTier::landed(SeqId seq, int32_t from_block, int32_t good) {
  const int32_t slot = slots_.slot_of(seq);
  slots_.truncate(seq, from_block * block_size_);
  const std::vector<uint8_t>& buffer = staged_.at(seq);
  for (int32_t i = 0; i < good; ++i)
    runner_.import_run(slot, block_size_,
                       std::span(buffer.data() + size_t(i) * block_bytes_, block_bytes_));
}

void StaticPrefixTier::store_computed(std::span<const ComputedRun> runs) {
  for (const ComputedRun& r : runs)
    if (r.first < r.n_prompt)
      store(slots_.slot_of(r.seq), r.tokens.first(size_t(std::min(r.n_prompt, r.n_computed))));
}

void StaticPrefixTier::store(int32_t slot, std::span<const int32_t> tokens) {
  if (!disk_.enabled()) return;
  const size_t bs = size_t(block_size_);
  const size_t full = tokens.size() / bs;
  uint64_t hash = PrefixCache::kRootHash;
  for (size_t i = 0; i < full; ++i) {
    const std::span<const int32_t> prefix = tokens.first((i + 1) * bs);
    hash = PrefixCache::chain_hash(hash, prefix.last(bs));
    if (disk_.contains(hash)) continue;
    runner_.cache().export_run(slot, int32_t(i * bs), block_size_, out_);
    if (!disk_.store(hash, prefix, out_)) return;
  }
}

}  // namespace kvforge
