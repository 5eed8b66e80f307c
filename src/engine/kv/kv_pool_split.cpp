#include "engine/kv/kv_pool_split.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kvforge {

uint64_t snapshot_bytes(const ModelShape& s, int64_t snapshots) {
  return snapshots > 0 ? uint64_t(snapshots) * s.state_bytes_per_sequence : 0;
}

uint64_t kv_budget_after_snapshots(const ModelShape& s, uint64_t kv_budget, int64_t snapshots) {
  const uint64_t held = snapshot_bytes(s, snapshots);
  if (held > 0 && held >= kv_budget)
    throw std::invalid_argument("KV memory of " + std::to_string(kv_budget) +
                                " bytes does not hold the " + std::to_string(snapshots) +
                                " recurrent-state snapshots (" + std::to_string(held) + " bytes)");
  return kv_budget - held;
}

KvPoolSplit split_kv_pool(const ModelShape& s, KvFormat f, uint64_t kv_budget, int64_t n_ctx,
                          int64_t block_tokens, int64_t max_seqs) {
  if (max_seqs < 1 || n_ctx < 1 || block_tokens < 1)
    throw std::invalid_argument("KV pool split: max_seqs, context and block size must be ≥ 1");
  KvPoolSplit p;
  if (s.state_bytes_per_sequence > 0) {
    const int64_t fit = max_sequences_for(s, f, 0, n_ctx, kv_budget, block_tokens);
    p.state_slots = std::clamp<int64_t>(fit, 1, max_seqs);
    p.state_bytes = uint64_t(p.state_slots) * s.state_bytes_per_sequence;
  }
  if (p.state_bytes >= kv_budget) return p;
  p.blocks = kv_pool_blocks(s, f, kv_budget - p.state_bytes, block_tokens);
  p.block_bytes = uint64_t(p.blocks) * kv_block_bytes(s, f, block_tokens);
  return p;
}

}  // namespace kvforge
