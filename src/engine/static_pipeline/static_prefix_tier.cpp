#include "engine/static_pipeline/static_prefix_tier.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/kv/prefix_cache.h"

namespace kvforge {

StaticPrefixTier::StaticPrefixTier(KvDiskTier& disk, StaticRunner& runner,
                                   const StaticSlotManager& slots)
    : disk_(disk),
      runner_(runner),
      slots_(slots),
      block_size_(disk.identity().block_size),
      block_bytes_(runner.cache().run_bytes(block_size_)) {
  if (block_bytes_ != disk.identity().payload_bytes)
    throw std::invalid_argument("StaticPrefixTier: a block of the static cache is " +
                                std::to_string(block_bytes_) + " bytes, the disk tier's " +
                                std::to_string(disk.identity().payload_bytes));
  out_.resize(block_bytes_);
}

int32_t StaticPrefixTier::fetch(std::span<const int32_t> prompt, int32_t beyond) {
  n_staged_ = 0;
  if (!disk_.enabled() || prompt.empty()) return 0;
  const size_t bs = size_t(block_size_);
  const int32_t eligible = int32_t((prompt.size() - 1) / bs);
  std::vector<uint64_t> hashes;  // chained, of the blocks the index holds
  for (uint64_t h = PrefixCache::kRootHash; int32_t(hashes.size()) < eligible;) {
    h = PrefixCache::chain_hash(h, prompt.subspan(hashes.size() * bs, bs));
    if (!disk_.contains(h)) break;
    hashes.push_back(h);
  }
  disk_.note_misses(eligible - int32_t(hashes.size()));
  if (int64_t(hashes.size()) * block_size_ <= beyond) return 0;
  staged_.resize(hashes.size() * block_bytes_);
  for (; n_staged_ < int32_t(hashes.size()); ++n_staged_) {
    const std::span<uint8_t> dst(staged_.data() + size_t(n_staged_) * block_bytes_, block_bytes_);
    if (!disk_.load(hashes[size_t(n_staged_)], prompt.first(size_t(n_staged_ + 1) * bs), dst))
      break;
  }
  return n_staged_ * block_size_;
}

void StaticPrefixTier::install(int32_t slot) {
  runner_.release(slot);
  for (int32_t i = 0; i < n_staged_; ++i)
    runner_.import_run(
        slot, block_size_,
        std::span<const uint8_t>(staged_.data() + size_t(i) * block_bytes_, block_bytes_));
  n_staged_ = 0;
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
