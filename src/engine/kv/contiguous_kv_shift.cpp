// ContiguousKvCache's half of a context shift (contiguous_kv_cache.h for the
// layout, kv_shift.h for the rotation): one kv head's positions are one run
// of records, so moving positions down is one memmove per head and format.
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/kv/contiguous_kv_cache.h"
#include "engine/kv/kv_shift.h"

namespace kvforge {

void ContiguousKvCache::move_down(int layer, int32_t seq, int32_t first, int32_t drop, int32_t n) {
  if (first < 0 || drop < 0 || first + drop > n || n > capacity_)
    throw std::out_of_range("ContiguousKvCache::move_down: positions [" +
                            std::to_string(first + drop) + ", " + std::to_string(n) + ") to " +
                            std::to_string(first) + " in a capacity of " +
                            std::to_string(capacity_));
  const size_t count = size_t(n - first - drop);
  if (drop == 0 || count == 0) return;
  check(layer, seq, first);
  const KvLayerRun& r = layers_[size_t(layer)];
  for (int h = 0; h < r.n_kv_head; ++h) {
    uint8_t* k = k_at(layer, seq, h, first);
    uint8_t* v = v_at(layer, seq, h, first);
    std::memmove(k, k + size_t(drop) * r.k_head_bytes, count * r.k_head_bytes);
    std::memmove(v, v + size_t(drop) * r.v_head_bytes, count * r.v_head_bytes);
  }
}

void ContiguousKvCache::rerotate_k(int layer, int32_t seq, int32_t first, int32_t count,
                                   const RopeTable& rope, int32_t delta) {
  if (count <= 0) return;
  check(layer, seq, first);
  check(layer, seq, first + count - 1);
  std::vector<float> rotation(static_cast<size_t>(rope.rope_dim()));
  shift_rotation(rope, delta, rotation.data());
  const KvLayerRun& r = layers_[size_t(layer)];
  std::vector<float> scratch(static_cast<size_t>(r.head_dim));
  for (int h = 0; h < r.n_kv_head; ++h)
    rerotate_k_records(format_.k, k_at(layer, seq, h, first), size_t(count), r.k_head_bytes,
                       r.head_dim, rope, rotation.data(), scratch.data());
}

}  // namespace kvforge
