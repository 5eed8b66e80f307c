#include "engine/kv/disk_tier_reader.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/kv/prefix_cache.h"

namespace kvforge {

DiskTierReader::DiskTierReader(KvDiskTier& disk, int32_t block_size)
    : disk_(disk),
      block_size_(block_size),
      with_states_(disk.identity().state_bytes > 0),
      loader_(disk, disk.read_mode()) {}

int32_t DiskTierReader::to_snapshot(std::span<const uint64_t> h, int32_t from_block,
                                    int32_t n) const {
  if (!with_states_) return n;
  while (n > 0 && !disk_.contains_state(h[size_t(from_block + n - 1)])) --n;
  return n;
}

std::vector<uint64_t> DiskTierReader::hashes(std::span<const int32_t> tokens,
                                             int32_t n_blocks) const {
  std::vector<uint64_t> h(static_cast<size_t>(n_blocks));
  uint64_t parent = PrefixCache::kRootHash;
  const size_t bs = size_t(block_size_);
  for (int32_t i = 0; i < n_blocks; ++i)
    parent = h[size_t(i)] = PrefixCache::chain_hash(parent, tokens.subspan(size_t(i) * bs, bs));
  return h;
}

int32_t DiskTierReader::available(std::span<const int32_t> tokens, int32_t from_block,
                                  int32_t max_blocks) {
  if (!disk_.enabled() || max_blocks <= 0) return 0;
  const std::vector<uint64_t> h = hashes(tokens, from_block + max_blocks);
  int32_t n = 0;
  while (n < max_blocks && disk_.contains(h[size_t(from_block + n)])) ++n;
  return to_snapshot(h, from_block, n);
}

void DiskTierReader::start_load(SeqId seq, std::span<const int32_t> tokens, int32_t from_block,
                                int32_t n, int32_t eligible) {
  const std::vector<uint64_t> h = hashes(tokens, from_block + n);
  n = to_snapshot(h, from_block, n);
  if (n == 0) {  // the scheduler asked for fewer blocks than available() found
    disk_.note_misses(eligible);
    ready_.push_back({seq, 0});
    return;
  }
  PrefixLoadJob job;
  job.seq = seq;
  job.from_block = from_block;
  job.eligible = eligible;
  job.hashes.assign(h.begin() + from_block, h.begin() + from_block + n);
  job.tokens.assign(tokens.begin(), tokens.begin() + size_t(from_block + n) * size_t(block_size_));
  job.import = destination(seq, from_block, n);
  if (with_states_ && !(job.import_state = state_destination(seq)))
    throw std::logic_error("disk tier: a hybrid model's load needs a destination for its state");
  from_blocks_.emplace_back(seq, from_block);
  loader_.submit(std::move(job));
}

std::vector<LoadedPrefix> DiskTierReader::take_loaded(bool wait) {
  std::vector<LoadedPrefix> out;
  out.swap(ready_);
  for (const PrefixLoadResult& r : loader_.take(wait && out.empty())) {
    const int32_t good = note_reads(r);
    disk_.note_misses(r.eligible - good);
    const auto it = std::find_if(from_blocks_.begin(), from_blocks_.end(),
                                 [&](const auto& f) { return f.first == r.seq; });
    if (it == from_blocks_.end())
      throw std::logic_error("disk tier: a load ended for sequence " + std::to_string(r.seq) +
                             ", which started none");
    landed(r.seq, it->second, good);
    from_blocks_.erase(it);
    dropped(r.seq);
    out.push_back({r.seq, good});
  }
  return out;
}

int32_t DiskTierReader::note_reads(const PrefixLoadResult& r) {
  const bool state_ok = r.state_good();
  int32_t good = 0;
  for (size_t i = 0; i < r.reads.size(); ++i) {
    // Blocks read whole but useless without their state are left unaccounted.
    if (!state_ok && r.reads[i].outcome == KvDiskTier::BlockRead::kHit) continue;
    if (disk_.note_read(r.hashes[i], r.reads[i])) ++good;
  }
  if (r.state) disk_.note_state_read(r.hashes.back(), *r.state);
  return state_ok ? good : 0;
}

void DiskTierReader::cancel_load(SeqId seq) {
  std::erase_if(ready_, [seq](const LoadedPrefix& l) { return l.seq == seq; });
  loader_.cancel(seq);
  std::erase_if(from_blocks_, [seq](const auto& f) { return f.first == seq; });
  dropped(seq);
}

}  // namespace kvforge
