// Where the model's forward pass reads and writes K and V. The contiguous,
// paged and static caches implement it; the forward pass never knows which.
// Storage only: which positions a sequence owns is the caller's business
// (KV metadata never lives here).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/ops/attention.h"

namespace kvforge {

// One sequence's recurrent state in one linear-attention layer of a hybrid
// model (shapes: ModelConfig::linear). The forward pass zeroes it when the
// sequence starts at position 0 and refuses to continue from any other
// position than n_past, so a state can never be paired with the wrong KV.
struct RecurrentState {
  float* conv = nullptr;      // [conv_channels][conv_kernel - 1] last inputs, oldest first
  float* matrix = nullptr;    // [n_v_heads][head_dim][head_dim] delta-rule states
  int32_t* n_past = nullptr;  // positions of the sequence the state has absorbed
  // A snapshot to take on the way (prefix caching of hybrid models): when a
  // step passes position snapshot_at, the layer copies its conv window and
  // matrices, as they are after absorbing positions [0, snapshot_at), to
  // snap_conv and snap_matrix (shapes as above). None when snap_conv is null.
  float* snap_conv = nullptr;
  float* snap_matrix = nullptr;
  int32_t snapshot_at = 0;
};

class KvStore {
 public:
  virtual ~KvStore() = default;
  virtual KvFormat format() const = 0;
  // Stores K and V ([kv_dim] f32 each) of sequence `seq` at position `pos` of `layer`.
  virtual void write(int layer, int32_t seq, int32_t pos, const float* k, const float* v) = 0;
  // Appends to `out` the spans covering positions [first, n) of `seq` in
  // `layer`, in order (the first span starts at position `first`). A store
  // may have dropped positions before `first` of a sliding-window layer.
  virtual void spans(int layer, int32_t seq, int32_t first, int32_t n,
                     std::vector<KvSpan>& out) const = 0;
  // The state of `seq` in linear-attention layer `layer` (hybrid models only).
  virtual RecurrentState recurrent_state(int layer, int32_t seq) {
    throw std::logic_error("this KV store holds no recurrent state (layer " +
                           std::to_string(layer) + ", sequence " + std::to_string(seq) +
                           "): hybrid models need a store with a state pool");
  }
};

}  // namespace kvforge
