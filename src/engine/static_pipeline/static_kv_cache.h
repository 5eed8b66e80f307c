// The static KV cache: allocated once at full capacity for every slot, never
// resized, with an attention mask per slot telling which positions hold data.
//
// Layout per layer (K and V alike, each in its own format):
//   [slots][n_kv_head][capacity] head records (core/formats/kv_format.h):
// one kv head's records of a slot are one contiguous run, which attention
// streams in order (as in ContiguousKvCache, whose header has the figures).
// Mask: [slots][capacity] bytes, 1 = position filled. The valid part of a
// slot is always a prefix [0, length); positions past it keep whatever an
// earlier sequence left there, which the mask makes unreadable.
//
// For a plan the cache and the mask are explicit state: a plan reads them as
// inputs and writes them as outputs (KvWrite, UpdateMask), nothing is hidden.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ops/attention.h"
#include "model/model_config.h"

namespace kvforge {

class StaticKvCache {
 public:
  StaticKvCache(const ModelConfig& config, int32_t capacity, int32_t slots, KvFormat format);

  int32_t capacity() const { return capacity_; }
  int32_t slots() const { return slots_; }
  KvFormat format() const { return format_; }
  size_t bytes() const { return k_.size() + v_.size() + mask_.size(); }

  // Encodes K and V ([kv_dim] f32 each) of `slot` at `pos` of `layer`.
  void write(int layer, int32_t slot, int32_t pos, const float* k, const float* v);
  // Positions [0, n) of `slot` in `layer` as one span.
  KvSpan span(int layer, int32_t slot, int32_t n) const;

  // [capacity] bytes, 1 = filled.
  uint8_t* mask(int32_t slot) { return mask_.data() + size_t(slot) * size_t(capacity_); }
  const uint8_t* mask(int32_t slot) const {
    return mask_.data() + size_t(slot) * size_t(capacity_);
  }
  // Filled positions of the slot (the length of its valid prefix).
  int32_t length(int32_t slot) const;
  // Marks positions [length, capacity) of the slot unfilled (length 0 frees it).
  void truncate(int32_t slot, int32_t length);

  // Overwrites every unfilled position's records of every slot and layer with
  // `byte` (0xFF makes f32/f16 records NaN): what a test does to prove the
  // mask, not luck, keeps stale data out of attention.
  void poison_unfilled(uint8_t byte);

 private:
  size_t record_index(int layer, int32_t slot, int head, int32_t pos) const;

  int n_layer_, n_kv_head_, head_dim_;
  int32_t capacity_, slots_;
  KvFormat format_;
  size_t k_head_bytes_, v_head_bytes_;
  std::vector<uint8_t> k_;     // [n_layer][slots][n_kv_head][capacity] K records
  std::vector<uint8_t> v_;     // [n_layer][slots][n_kv_head][capacity] V records
  std::vector<uint8_t> mask_;  // [slots][capacity] 1 = filled
};

}  // namespace kvforge
