// The static KV cache: a ContiguousKvCache of `slots` sequences at full
// capacity, allocated (and made resident) once and never resized, plus an
// attention mask per slot telling which positions hold data. A slot is a
// KvStore sequence.
//
// Layout: ContiguousKvCache's, [n_layer][slots][n_kv_head][capacity] head
// records (K and V each in its own format; that header has the figures).
// Mask: [slots][capacity] bytes, 1 = position filled. The valid part of a
// slot is always a prefix [0, length); positions past it keep whatever an
// earlier sequence left there, which the mask makes unreadable.
//
// Two ways fill it, under one mask: a forward pass over the KvStore interface
// (write() marks the position filled; spans() refuses to hand out a position
// nobody wrote), and a plan, for which the cache and the mask are explicit
// state: it reads them as inputs and writes them as outputs (UpdateMask marks
// its rows before the attention mask is built, KvWrite stores K/V), nothing
// is hidden.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/kv/contiguous_kv_cache.h"
#include "model/kv_store.h"
#include "model/model_config.h"

namespace kvforge {

class StaticKvCache final : public KvStore {
 public:
  StaticKvCache(const ModelConfig& config, int32_t capacity, int32_t slots, KvFormat format);

  int32_t capacity() const { return kv_.capacity(); }
  int32_t slots() const { return kv_.n_seqs(); }
  KvFormat format() const override { return kv_.format(); }
  size_t bytes() const { return kv_.bytes() + mask_.size(); }

  // Encodes K and V ([kv_dim] f32 each) of `slot` at `pos` of `layer` and
  // marks the position filled.
  void write(int layer, int32_t slot, int32_t pos, const float* k, const float* v) override;
  // Appends span(layer, slot, n); throws std::logic_error when position n - 1
  // is not filled (the valid part being a prefix, then some of [0, n) is not).
  void spans(int layer, int32_t slot, int32_t first, int32_t n,
             std::vector<KvSpan>& out) const override;
  // Positions [0, n) of `slot` in `layer` as one span, filled or not: a plan
  // spans its variant's whole KV length and masks what is not filled.
  KvSpan span(int layer, int32_t slot, int32_t n) const { return kv_.span(layer, slot, n); }

  // [capacity] bytes, 1 = filled.
  uint8_t* mask(int32_t slot) { return mask_.data() + size_t(slot) * size_t(capacity()); }
  const uint8_t* mask(int32_t slot) const {
    return mask_.data() + size_t(slot) * size_t(capacity());
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
  int n_layer_;
  ContiguousKvCache kv_;       // [n_layer][slots][n_kv_head][capacity] K and V records
  std::vector<uint8_t> mask_;  // [slots][capacity] 1 = filled
};

}  // namespace kvforge
