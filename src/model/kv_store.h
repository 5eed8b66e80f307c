// Where the model's forward pass reads and writes K and V. The contiguous,
// paged and static caches implement it; the forward pass never knows which.
// Storage only: which positions a sequence owns is the caller's business
// (KV metadata never lives here).
#pragma once

#include <cstdint>
#include <vector>

#include "core/ops/attention.h"

namespace kvforge {

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
};

}  // namespace kvforge
