#include "engine/kv/hybrid_kv_manager.h"

#include <stdexcept>
#include <string>

namespace kvforge {

HybridKvManager::HybridKvManager(BlockManager& blocks, RecurrentStatePool& states)
    : blocks_(blocks), states_(states) {
  // A prefix hit would restore K/V whose recurrent state nobody kept.
  if (blocks.prefix_cache_enabled())
    throw std::logic_error("HybridKvManager: the block manager must not reuse cached prefixes");
}

bool HybridKvManager::can_admit(std::span<const int32_t> tokens, int32_t n_tokens,
                                int width) const {
  return states_.n_free() >= width && blocks_.can_admit(tokens, n_tokens, width);
}

int32_t HybridKvManager::admit(SeqId seq, std::span<const int32_t> tokens, int32_t n_tokens) {
  if (!states_.can_allocate() || !blocks_.can_admit(tokens, n_tokens, 1))
    throw std::logic_error("HybridKvManager: admit without room (ask can_admit first)");
  const int32_t reused = blocks_.admit(seq, tokens, n_tokens);
  if (reused != 0) {
    blocks_.free(seq);
    throw std::logic_error("HybridKvManager: the block manager reused a prefix");
  }
  slots_[seq] = states_.allocate();
  return 0;
}

void HybridKvManager::free(SeqId seq) {
  const int32_t slot = slot_of(seq);
  blocks_.free(seq);
  states_.release(slot);
  slots_.erase(seq);
}

void HybridKvManager::fork(SeqId parent, SeqId child) {
  const int32_t from = slot_of(parent);
  if (!states_.can_allocate())
    throw std::logic_error("HybridKvManager: no state slot for fork " + std::to_string(child) +
                           " of sequence " + std::to_string(parent));
  blocks_.fork(parent, child);
  const int32_t to = states_.allocate();
  states_.copy(from, to);
  slots_[child] = to;
}

RecurrentState HybridKvManager::state(int layer, SeqId seq) {
  return states_.state(layer, slot_of(seq));
}

int32_t HybridKvManager::slot_of(SeqId seq) const {
  const auto it = slots_.find(seq);
  if (it == slots_.end())
    throw std::out_of_range("hybrid KV: sequence " + std::to_string(seq) + " has no state slot");
  return it->second;
}

}  // namespace kvforge
