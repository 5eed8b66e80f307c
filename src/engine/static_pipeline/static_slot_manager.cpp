#include "engine/static_pipeline/static_slot_manager.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kvforge {

StaticSlotManager::StaticSlotManager(StaticRunner& runner, bool reuse_slots)
    : runner_(runner), reuse_(reuse_slots), slots_(size_t(runner.slots())) {
  for (Slot& slot : slots_) slot.tokens.reserve(size_t(runner.capacity()));
}

int32_t StaticSlotManager::reusable(int32_t index, std::span<const int32_t> prompt) const {
  const Slot& slot = slots_[size_t(index)];
  if (prompt.empty()) return 0;
  // At least the last prompt token is computed: its logits give the first sample.
  const size_t limit =
      std::min({slot.tokens.size(), prompt.size() - 1, size_t(std::max(slot.reusable, 0))});
  size_t common = 0;
  while (common < limit && slot.tokens[common] == prompt[common]) ++common;
  // The rest goes through the generate plan one token at a time: beyond a
  // prefill chunk of it, recomputing the whole prompt chunk by chunk is cheaper.
  if (prompt.size() - common > size_t(runner_.config().prefill_chunk)) return 0;
  // A sliding-window ring keeps only the last positions the slot wrote.
  if (!runner_.window_intact(index, int32_t(common))) return 0;
  // A hybrid model's states hold the slot's whole length: only a prompt that
  // continues all of it reuses the slot (its states are then exactly right).
  if (!runner_.state_intact(index, int32_t(common))) return 0;
  return int32_t(common);
}

int32_t StaticSlotManager::best_free(std::span<const int32_t> prompt, int32_t* kept) const {
  int32_t best = -1, best_kept = -1;
  for (int32_t s = 0; s < slots(); ++s) {
    if (slots_[size_t(s)].seq >= 0) continue;
    const int32_t k = reusable(s, prompt);
    if (k > best_kept) {
      best = s;
      best_kept = k;
    }
  }
  *kept = std::max(best_kept, 0);
  return best;
}

int32_t StaticSlotManager::cached_prefix(std::span<const int32_t> tokens) const {
  int32_t kept = 0;
  best_free(tokens, &kept);
  return kept;
}

bool StaticSlotManager::can_admit(std::span<const int32_t>, int32_t n_tokens, int width) const {
  return slots() - occupied_ >= width && n_tokens <= runner_.capacity();
}

int32_t StaticSlotManager::admit(SeqId seq, std::span<const int32_t> tokens, int32_t n_tokens) {
  if (seq < 0) throw std::invalid_argument("static slots: sequence id " + std::to_string(seq));
  for (const Slot& s : slots_)
    if (s.seq == seq)
      throw std::invalid_argument("static slots: sequence " + std::to_string(seq) +
                                  " already holds a slot");
  if (!can_admit(tokens, n_tokens, 1))
    throw std::logic_error("static slots: no free slot for " + std::to_string(n_tokens) +
                           " tokens (" + std::to_string(occupied_) + " of " +
                           std::to_string(slots()) + " occupied)");
  int32_t kept = 0;
  Slot& slot = slots_[size_t(best_free(tokens, &kept))];
  slot.seq = seq;
  slot.reserved = n_tokens;
  slot.reusable = INT32_MAX;  // the engine cuts the slot to `kept` and computes the rest afresh
  ++occupied_;
  return kept;
}

int32_t StaticSlotManager::slot_of(SeqId seq) const {
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].seq == seq) return int32_t(i);
  throw std::logic_error("static slots: sequence " + std::to_string(seq) + " holds no slot");
}

bool StaticSlotManager::can_append(SeqId seq, int32_t n) const {
  return n >= 0 && slots_[size_t(slot_of(seq))].reserved + n <= runner_.capacity();
}

void StaticSlotManager::append(SeqId seq, int32_t n) {
  if (!can_append(seq, n))
    throw std::logic_error("static slots: sequence " + std::to_string(seq) + " cannot grow by " +
                           std::to_string(n) + " past the capacity of " +
                           std::to_string(runner_.capacity()));
  slots_[size_t(slot_of(seq))].reserved += n;
}

void StaticSlotManager::truncate(SeqId seq, int32_t n_tokens) {
  const int32_t index = slot_of(seq);
  Slot& slot = slots_[size_t(index)];
  if (runner_.length(index) != n_tokens) runner_.truncate(index, n_tokens);
  if (slot.tokens.size() > size_t(n_tokens)) slot.tokens.resize(size_t(n_tokens));
}

void StaticSlotManager::mark_computed(SeqId seq, std::span<const int32_t> tokens,
                                      int32_t n_computed) {
  Slot& slot = slots_[size_t(slot_of(seq))];
  if (n_computed < 0 || size_t(n_computed) > tokens.size() || n_computed > slot.reserved)
    throw std::invalid_argument("static slots: sequence " + std::to_string(seq) + " computed " +
                                std::to_string(n_computed) + " of " +
                                std::to_string(tokens.size()) + " tokens, " +
                                std::to_string(slot.reserved) + " reserved");
  slot.tokens.assign(tokens.begin(), tokens.begin() + n_computed);
}

void StaticSlotManager::free(SeqId seq) {
  const int32_t index = slot_of(seq);
  Slot& slot = slots_[size_t(index)];
  slot.seq = -1;
  slot.reserved = 0;
  if (!reuse_) {
    runner_.release(index);
    slot.tokens.clear();
  }
  --occupied_;
}

int32_t StaticSlotManager::free_slot_holding(std::span<const int32_t> tokens,
                                             int32_t* common) const {
  int32_t best = -1;
  *common = 0;
  for (int32_t i = 0; i < slots(); ++i) {
    const Slot& slot = slots_[size_t(i)];
    if (slot.seq >= 0) continue;
    const size_t limit =
        std::min({slot.tokens.size(), tokens.size(), size_t(std::max(slot.reusable, 0))});
    const auto diff = std::mismatch(tokens.begin(), tokens.begin() + limit, slot.tokens.begin());
    const auto n = int32_t(diff.first - tokens.begin());
    if (best < 0 || n > *common) {
      best = i;
      *common = n;
    }
  }
  return best;
}

int32_t StaticSlotManager::empty_free_slot() {
  int32_t best = -1;
  for (int32_t i = 0; i < slots(); ++i)
    if (slots_[size_t(i)].seq < 0 &&
        (best < 0 || slots_[size_t(i)].tokens.size() < slots_[size_t(best)].tokens.size()))
      best = i;
  if (best >= 0) {
    runner_.release(best);
    slots_[size_t(best)].tokens.clear();
  }
  return best;
}

void StaticSlotManager::held(int32_t slot, std::span<const int32_t> tokens) {
  Slot& s = slots_.at(size_t(slot));
  s.tokens.assign(tokens.begin(), tokens.end());
  s.reusable = INT32_MAX;
}

int32_t StaticSlotManager::forget(std::span<const int32_t> tokens) {
  int32_t forgotten = 0;
  for (int32_t i = 0; i < slots(); ++i) {
    Slot& slot = slots_[size_t(i)];
    const size_t n = std::min(slot.tokens.size(), tokens.size());
    if (slot.seq >= 0 || n == 0 ||
        !std::equal(tokens.begin(), tokens.begin() + n, slot.tokens.begin()))
      continue;
    forgotten += int32_t(slot.tokens.size());
    runner_.release(i);
    slot.tokens.clear();
  }
  return forgotten;
}

int64_t StaticSlotManager::positions_filled() const {
  int64_t n = 0;
  for (size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].seq >= 0) n += runner_.length(int32_t(i));
  return n;
}

}  // namespace kvforge
