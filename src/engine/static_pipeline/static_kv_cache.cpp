#include "engine/static_pipeline/static_kv_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kvforge {
namespace {

ContiguousKvCache make_records(const ModelConfig& config, int32_t capacity, int32_t slots,
                               KvFormat format) {
  if (capacity <= 0 || slots <= 0)
    throw std::invalid_argument("StaticKvCache: capacity " + std::to_string(capacity) +
                                " and slots " + std::to_string(slots) + " must be positive");
  return ContiguousKvCache(config, capacity, format, slots);
}

}  // namespace

StaticKvCache::StaticKvCache(const ModelConfig& config, int32_t capacity, int32_t slots,
                             KvFormat format)
    : n_layer_(config.n_layer),
      kv_(make_records(config, capacity, slots, format)),
      mask_(size_t(slots) * size_t(capacity), 0) {
  kv_.prefault();  // allocated once, resident before the first step
}

void StaticKvCache::write(int layer, int32_t slot, int32_t pos, const float* k, const float* v) {
  if (layer < 0 || layer >= n_layer_ || slot < 0 || slot >= slots() || pos < 0 || pos >= capacity())
    throw std::out_of_range("static KV cache: layer " + std::to_string(layer) + ", slot " +
                            std::to_string(slot) + ", position " + std::to_string(pos) +
                            " outside " + std::to_string(slots()) + " slots x " +
                            std::to_string(capacity()) + " positions");
  kv_.write(layer, slot, pos, k, v);
  mask(slot)[pos] = 1;
}

void StaticKvCache::spans(int layer, int32_t slot, int32_t first, int32_t n,
                          std::vector<KvSpan>& out) const {
  if (n > 0 && n <= capacity() && slot >= 0 && slot < slots() && !mask(slot)[n - 1])
    throw std::logic_error("static KV cache: position " + std::to_string(n - 1) + " of slot " +
                           std::to_string(slot) + " read before it was written (" +
                           std::to_string(length(slot)) + " filled)");
  kv_.spans(layer, slot, first, n, out);
}

int32_t StaticKvCache::length(int32_t slot) const {
  const uint8_t* m = mask(slot);
  int32_t n = 0;
  while (n < capacity() && m[n]) ++n;
  return n;
}

void StaticKvCache::truncate(int32_t slot, int32_t length) {
  if (slot < 0 || slot >= slots() || length < 0 || length > capacity())
    throw std::out_of_range("static KV cache: truncate slot " + std::to_string(slot) + " to " +
                            std::to_string(length) + " (slots " + std::to_string(slots()) +
                            ", capacity " + std::to_string(capacity()) + ")");
  std::fill(mask(slot) + length, mask(slot) + capacity(), uint8_t{0});
}

void StaticKvCache::poison_unfilled(uint8_t byte) {
  for (int l = 0; l < n_layer_; ++l)
    for (int32_t s = 0; s < slots(); ++s)
      for (int32_t p = 0; p < capacity(); ++p)
        if (!mask(s)[p]) kv_.fill_position(l, s, p, byte);
}

}  // namespace kvforge
