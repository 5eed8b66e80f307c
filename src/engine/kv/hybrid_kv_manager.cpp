#include "engine/kv/hybrid_kv_manager.h"

#include <stdexcept>
#include <string>

namespace kvforge {

HybridKvManager::HybridKvManager(BlockManager& blocks, RecurrentStatePool& states,
                                 StateSnapshots* snapshots)
    : blocks_(blocks),
      states_(states),
      snapshots_(snapshots && snapshots->n_entries() > 0 ? snapshots : nullptr) {
  // A prefix hit would restore K/V whose recurrent state nobody kept.
  if (!snapshots_ && blocks.prefix_cache_enabled())
    throw std::logic_error(
        "HybridKvManager: without state snapshots the block manager must not reuse cached "
        "prefixes");
}

StateSnapshots::Hit HybridKvManager::hit(std::span<const int32_t> tokens) const {
  if (!snapshots_) return {};
  return snapshots_->longest(tokens, blocks_.cached_prefix(tokens));
}

int32_t HybridKvManager::cached_prefix(std::span<const int32_t> tokens) const {
  return hit(tokens).length;
}

bool HybridKvManager::can_admit(std::span<const int32_t> tokens, int32_t n_tokens,
                                int width) const {
  return states_.n_free() >= width && blocks_.can_allocate(tokens, n_tokens, cached_prefix(tokens));
}

int32_t HybridKvManager::admit(SeqId seq, std::span<const int32_t> tokens, int32_t n_tokens) {
  const StateSnapshots::Hit h = hit(tokens);
  if (!states_.can_allocate() || !blocks_.can_allocate(tokens, n_tokens, h.length))
    throw std::logic_error("HybridKvManager: admit without room (ask can_admit first)");
  const int32_t reused = blocks_.allocate(seq, tokens, n_tokens, h.length);
  if (reused != h.length) {
    blocks_.free(seq);
    throw std::logic_error("HybridKvManager: the block manager reused " + std::to_string(reused) +
                           " tokens, the state snapshot covers " + std::to_string(h.length));
  }
  const int32_t slot = states_.allocate();
  slots_[seq] = slot;
  if (h.length > 0) snapshots_->restore(h.entry, states_, slot);
  plan_snapshot(seq, tokens, reused);
  return reused;
}

// A snapshot at the prompt's last block boundary before its last token,
// unless one exists or the reused prefix already reaches it.
void HybridKvManager::plan_snapshot(SeqId seq, std::span<const int32_t> tokens, int32_t reused) {
  if (!snapshots_ || tokens.empty()) return;
  const int32_t bs = blocks_.block_size();
  const int32_t at = int32_t(tokens.size() - 1) / bs * bs;
  if (at <= reused || snapshots_->has(tokens.first(size_t(at)))) return;
  const int32_t entry = snapshots_->take(tokens.first(size_t(at)));
  if (entry >= 0) pending_[seq] = entry;
}

void HybridKvManager::mark_computed(SeqId seq, std::span<const int32_t> tokens,
                                    int32_t n_computed) {
  blocks_.mark_computed(seq, tokens, n_computed);
  const auto it = pending_.find(seq);
  if (it == pending_.end()) return;
  if (n_computed < snapshots_->length(it->second)) return;
  snapshots_->finish(it->second);
  pending_.erase(it);
}

void HybridKvManager::free(SeqId seq) {
  if (const auto it = pending_.find(seq); it != pending_.end()) {
    snapshots_->drop(it->second);
    pending_.erase(it);
  }
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

void HybridKvManager::restore_state(SeqId seq, std::span<const uint8_t> bytes, int32_t length) {
  states_.load(slot_of(seq), bytes, length);
  // No step fills a snapshot at or before `length` any more.
  const auto it = pending_.find(seq);
  if (it == pending_.end() || snapshots_->length(it->second) > length) return;
  if (snapshots_->length(it->second) == length) {
    snapshots_->fill(it->second, bytes);
    return;
  }
  snapshots_->drop(it->second);
  pending_.erase(it);
}

RecurrentState HybridKvManager::state(int layer, SeqId seq) {
  RecurrentState st = states_.state(layer, slot_of(seq));
  if (const auto it = pending_.find(seq); it != pending_.end())
    snapshots_->target(layer, it->second, st);
  return st;
}

int32_t HybridKvManager::slot_of(SeqId seq) const {
  const auto it = slots_.find(seq);
  if (it == slots_.end())
    throw std::out_of_range("hybrid KV: sequence " + std::to_string(seq) + " has no state slot");
  return it->second;
}

}  // namespace kvforge
