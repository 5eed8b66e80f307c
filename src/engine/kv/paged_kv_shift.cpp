// PagedKvCache::rerotate_k: the context shift's K rotation over one block of
// the pool (paged_kv_cache.h for the layout, kv_shift.h for the rotation).
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/kv/kv_shift.h"
#include "engine/kv/paged_kv_cache.h"

namespace kvforge {

void PagedKvCache::rerotate_k(int layer, BlockId block, int32_t first, int32_t n,
                              const RopeTable& rope, int32_t delta) {
  check_layer(layer, "rerotate_k");
  check_block(block, "rerotate_k");
  if (first < 0 || n < 0 || first + n > block_size_)
    throw std::out_of_range("PagedKvCache::rerotate_k: positions [" + std::to_string(first) + ", " +
                            std::to_string(first + n) + ") outside a block of " +
                            std::to_string(block_size_));
  if (const int32_t rc = blocks_.refcount(block); rc != 1)
    throw std::logic_error("PagedKvCache::rerotate_k: block " + std::to_string(block) +
                           " has refcount " + std::to_string(rc) +
                           ", expected 1 (a shared block must be copied before it is shifted)");
  std::vector<float> rotation(static_cast<size_t>(rope.rope_dim()));
  shift_rotation(rope, delta, rotation.data());
  const KvLayerRun& r = layers_[size_t(layer)];
  std::vector<float> scratch(static_cast<size_t>(r.head_dim));
  uint8_t* run = k_run(layer, block) + size_t(first) * r.k_head_bytes;
  for (int h = 0; h < r.n_kv_head; ++h)
    rerotate_k_records(format_.k, run + size_t(h) * size_t(block_size_) * r.k_head_bytes, size_t(n),
                       r.k_head_bytes, r.head_dim, rope, rotation.data(), scratch.data());
}

}  // namespace kvforge
