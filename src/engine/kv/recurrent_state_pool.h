// The per-sequence recurrent states of a hybrid model's linear-attention
// layers (Qwen 3.5's Gated DeltaNet): one slot per running sequence, beside
// the KV blocks. A slot holds, for every recurrent layer, the conv window and
// the delta-rule matrices (ModelConfig::linear) in f32, and how many
// positions that layer's state has absorbed.
//
// Metadata (which slot is free) and storage live together here because a
// slot is one fixed-size record: there is nothing to page. Allocation is a
// question then an action (can_allocate / allocate), as for KV blocks.
//
// Layout: [n_slots][n_recurrent_layers] records of conv_floats then
// matrix_floats floats; n_past [n_slots][n_recurrent_layers].
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/kv_store.h"
#include "model/model_config.h"

namespace kvforge {

// Each layer's index among the recurrent layers ([n_layer], -1 for the
// others), how many there are and the shape of their states: where a
// layer's record sits in a slot, and how large it is.
struct RecurrentLayers {
  LinearAttentionConfig shape;
  std::vector<int32_t> index;
  int32_t count = 0;
  explicit RecurrentLayers(const ModelConfig& config);
};

class RecurrentStatePool {
 public:
  // No slots for a model without recurrent layers.
  RecurrentStatePool(const ModelConfig& config, int32_t n_slots);

  int32_t n_slots() const { return n_slots_; }
  int32_t n_free() const { return int32_t(free_.size()); }
  size_t bytes_per_slot() const { return bytes_per_slot_; }
  size_t bytes() const { return data_.size() * sizeof(float); }

  bool can_allocate() const { return !free_.empty(); }
  // A free slot, emptied (its states restart at position 0). Throws
  // std::length_error when none is free.
  int32_t allocate();
  void release(int32_t slot);
  // Copies every layer's state of `from` into `to` (n > 1 forks).
  void copy(int32_t from, int32_t to);
  // Sets every layer's state of `slot` from `bytes` (bytes_per_slot, a
  // snapshot's layout) as having absorbed n_past positions.
  void load(int32_t slot, std::span<const uint8_t> bytes, int32_t n_past);

  // `layer`'s state in `slot`; throws std::out_of_range for a layer that is
  // not recurrent or a slot outside the pool.
  RecurrentState state(int layer, int32_t slot);

 private:
  size_t record(int layer, int32_t slot) const;  // index into n_past_

  RecurrentLayers layers_;  // which layers hold a state, and its shape
  int32_t n_slots_ = 0;
  size_t bytes_per_slot_ = 0;
  std::vector<float> data_;
  std::vector<int32_t> n_past_;
  std::vector<int32_t> free_;  // free slots, the lowest last
};

}  // namespace kvforge
