// The static KV cache: `slots` sequences of `capacity` positions, allocated
// (and made resident) once and never resized, plus an attention mask per
// slot telling which positions hold data. A slot is a KvStore sequence.
//
// Layers come in two groups, each a ContiguousKvCache (that header has the
// record layout and figures):
//   full layers:    [n_full][slots][n_kv_head][capacity] head records;
//   window layers:  [n_ring][slots][n_kv_head][ring] head records, a ring of
//                   ring = min(window, capacity) positions: position p lives at
//                   p % ring, so a sliding-window layer costs its window, not
//                   the capacity. Per ring cell a tag keeps the position it
//                   holds ([n_ring][slots][ring] i32, -1 = none): a position
//                   that a later one overwrote is never read as itself.
//   shared-KV layers (Gemma 4's tail, ModelConfig::kv_source): nothing; a
//                   plan reads their source layer's records.
//   Each group has one head size: the full layers' head_dim, the window
//                   layers' layer_head_dim (Gemma 4's key_length_swa).
//   linear-attention layers (hybrid models): no K/V; one recurrent state per
//                   slot and layer instead (RecurrentStatePool: [slots][n_recurrent]
//                   conv windows and delta-rule matrices), allocated with the rest.
// Mask: [slots][capacity] bytes, 1 = position filled, shared by all layers.
// The valid part of a slot is always a prefix [0, length); positions past it
// keep whatever an earlier sequence left there, which the mask makes
// unreadable.
//
// Two ways fill it, under one mask: a forward pass over the KvStore interface
// (write() marks the position filled; spans() refuses to hand out a position
// nobody wrote, or one the ring no longer holds), and a plan, for which the
// cache and the mask are explicit state: it reads them as inputs and writes
// them as outputs (its Masks op marks its rows before the attention mask is
// built, its attention ops store K/V), nothing is hidden.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/kv/contiguous_kv_cache.h"
#include "engine/kv/recurrent_state_pool.h"
#include "model/kv_store.h"
#include "model/model_config.h"

namespace kvforge {

class StaticKvCache final : public KvStore {
 public:
  StaticKvCache(const ModelConfig& config, int32_t capacity, int32_t slots, KvFormat format);

  int32_t capacity() const { return capacity_; }
  int32_t slots() const { return slots_; }
  KvFormat format() const override { return format_; }
  // K/V records of both groups, the recurrent states, the masks and the ring tags.
  size_t bytes() const;
  // The state of `slot` in linear-attention layer `layer` (hybrid models).
  RecurrentState recurrent_state(int layer, int32_t slot) override {
    return states_.state(layer, slot);
  }
  // Recurrent-state bytes per slot (0 without linear-attention layers).
  size_t state_bytes_per_slot() const { return states_.bytes_per_slot(); }

  // The sliding window of `layer` (0: full attention, stored at full capacity).
  int32_t window(int layer) const { return windows_[size_t(layer)]; }
  // Positions per slot a window layer's ring holds: min(window, capacity); 0 without windows.
  int32_t ring_positions() const { return ring_; }

  // Encodes K and V ([kv_dim] f32 each) of `slot` at `pos` of `layer` and
  // marks the position filled.
  void write(int layer, int32_t slot, int32_t pos, const float* k, const float* v) override;
  // Appends the spans of positions [first, n) in order: one for a full
  // layer, up to two for a ring that wraps. Throws std::logic_error when
  // position n - 1 is not filled (the valid part being a prefix, then some
  // of [0, n) is not), or when the ring no longer holds one of [first, n).
  void spans(int layer, int32_t slot, int32_t first, int32_t n,
             std::vector<KvSpan>& out) const override;
  // spans() for a plan, unchecked and without allocating: positions [first, n)
  // of a window layer (n - first ≤ ring_positions()) into out[0..2); returns
  // how many spans (0 when first == n).
  int ring_spans(int layer, int32_t slot, int32_t first, int32_t n, KvSpan out[2]) const;
  // Positions [0, n) of `slot` in a full layer as one span, filled or not: a
  // plan spans its variant's whole KV length and masks what is not filled.
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
  // Context shift: positions [first + drop, n) of the slot move down to
  // [first, n - drop) in every layer, K re-rotated by -drop with `ropes`
  // ([n_layer], each layer's table), V as it is; the slot then holds n - drop
  // positions. Models without sliding windows only (std::logic_error).
  void shift(int32_t slot, int32_t first, int32_t drop, int32_t n,
             std::span<const RopeTable* const> ropes);
  // Whether positions [first, n) of the slot are filled and, in every window
  // layer, still in the ring: what a query that reads them needs.
  bool holds(int32_t slot, int32_t first, int32_t n) const;

  // Positions [first, first + n) of `slot` in every layer, in the paged
  // pool's block layout ([n_layer] x (K [n_kv_head][n] records, then V)),
  // so the KV disk tier's files serve both engines. Models without sliding
  // windows, recurrent or shared-KV layers only (runs_supported(); std::logic_error
  // otherwise). import_run marks the positions filled; [0, first) must be filled already.
  bool runs_supported() const;
  size_t run_bytes(int32_t n) const;
  void export_run(int32_t slot, int32_t first, int32_t n, std::span<uint8_t> out) const;
  void import_run(int32_t slot, int32_t first, int32_t n, std::span<const uint8_t> in);

  // Overwrites every unfilled position's records of every slot and layer
  // (for a ring: every cell not holding a filled position) with `byte`
  // (0xFF makes f32/f16 records NaN): what a test does to prove the mask,
  // not luck, keeps stale data out of attention.
  void poison_unfilled(uint8_t byte);

 private:
  void check(int layer, int32_t slot, int32_t pos, int32_t max_pos, const char* what) const;
  int32_t* tags(int ring_layer, int32_t slot) {
    return tags_.data() + (size_t(ring_layer) * size_t(slots_) + size_t(slot)) * size_t(ring_);
  }
  const int32_t* tags(int ring_layer, int32_t slot) const {
    return tags_.data() + (size_t(ring_layer) * size_t(slots_) + size_t(slot)) * size_t(ring_);
  }

  int n_layer_;
  int32_t capacity_;
  int32_t slots_;
  KvFormat format_;
  int32_t ring_ = 0;              // positions per slot of every window layer
  std::vector<int32_t> windows_;  // [n_layer] 0 = full attention
  std::vector<int>
      group_index_;  // [n_layer] the layer's index in full_ or ring_kv_ (-1: recurrent, shared)
  std::vector<bool> shared_;                  // [n_layer] reads another layer's K/V (gemma4)
  std::optional<ContiguousKvCache> full_;     // [n_full][slots][n_kv_head][capacity] records
  std::optional<ContiguousKvCache> ring_kv_;  // [n_ring][slots][n_kv_head][ring] records
  std::vector<int32_t> tags_;                 // [n_ring][slots][ring] position held, -1 = none
  std::vector<uint8_t> mask_;                 // [slots][capacity] 1 = filled
  RecurrentStatePool states_;                 // [slots] states of the recurrent layers
};

}  // namespace kvforge
