// How the paged engine splits a KV memory budget (--kv-memory) between a
// hybrid model's recurrent-state slots and K/V blocks; `kv-plan` prints the
// same split, so the two agree by construction.
//
// A running sequence holds one state slot for its whole life, however long
// it grows, so the slots are sized for the engine's context: as many
// sequences as fit the budget at n_ctx tokens each (max_sequences_for: a
// slot plus n_ctx tokens of K/V), at least one and at most max_seqs. The
// blocks take the rest of the budget. The engine runs at most state_slots
// sequences (branches) at once. Without recurrent layers there are no slots
// and every byte goes to blocks.
#pragma once

#include <cstdint>

#include "core/formats/kv_format.h"
#include "engine/kv/kv_memory_plan.h"

namespace kvforge {

struct KvPoolSplit {
  int64_t state_slots = 0;
  uint64_t state_bytes = 0;  // state_slots · state_bytes_per_sequence
  int64_t blocks = 0;        // blocks of block_tokens positions (kv_block_slots layers each)
  uint64_t block_bytes = 0;  // blocks · bytes per block
};

// Recurrent-state snapshots kept for prefix reuse (--state-snapshots) come
// out of the KV budget before the split: the budget that is left for the
// slots and blocks. 0 snapshots, or a model without recurrent layers: the
// whole budget. Throws std::invalid_argument when the snapshots alone do not
// fit, naming both sizes.
uint64_t snapshot_bytes(const ModelShape& shape, int64_t snapshots);
uint64_t kv_budget_after_snapshots(const ModelShape& shape, uint64_t kv_budget, int64_t snapshots);

// Throws std::invalid_argument when max_seqs, n_ctx or block_tokens is < 1.
// blocks is 0 when the budget holds the one slot and no block.
KvPoolSplit split_kv_pool(const ModelShape& shape, KvFormat format, uint64_t kv_budget,
                          int64_t n_ctx, int64_t block_tokens, int64_t max_seqs);

}  // namespace kvforge
