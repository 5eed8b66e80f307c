#include "engine/static_pipeline/static_kv_cache.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace kvforge {

StaticKvCache::StaticKvCache(const ModelConfig& config, int32_t capacity, int32_t slots,
                             KvFormat format)
    : n_layer_(config.n_layer),
      n_kv_head_(config.n_kv_head),
      head_dim_(config.head_dim),
      capacity_(capacity),
      slots_(slots),
      format_(format),
      k_head_bytes_(kv_head_bytes(format.k, config.head_dim)),
      v_head_bytes_(kv_head_bytes(format.v, config.head_dim)) {
  if (capacity <= 0 || slots <= 0)
    throw std::invalid_argument("StaticKvCache: capacity " + std::to_string(capacity) +
                                " and slots " + std::to_string(slots) + " must be positive");
  const size_t records = size_t(n_layer_) * size_t(slots) * size_t(capacity) * size_t(n_kv_head_);
  k_.assign(records * k_head_bytes_, 0);
  v_.assign(records * v_head_bytes_, 0);
  mask_.assign(size_t(slots) * size_t(capacity), 0);
}

size_t StaticKvCache::record_index(int layer, int32_t slot, int head, int32_t pos) const {
  return ((size_t(layer) * size_t(slots_) + size_t(slot)) * size_t(n_kv_head_) + size_t(head)) *
             size_t(capacity_) +
         size_t(pos);
}

void StaticKvCache::write(int layer, int32_t slot, int32_t pos, const float* k, const float* v) {
  if (layer < 0 || layer >= n_layer_ || slot < 0 || slot >= slots_ || pos < 0 || pos >= capacity_)
    throw std::out_of_range("static KV cache: layer " + std::to_string(layer) + ", slot " +
                            std::to_string(slot) + ", position " + std::to_string(pos) +
                            " outside " + std::to_string(slots_) + " slots x " +
                            std::to_string(capacity_) + " positions");
  for (int h = 0; h < n_kv_head_; ++h) {
    const size_t r = record_index(layer, slot, h, pos);
    kv_encode_head(format_.k, k + size_t(h) * head_dim_, k_.data() + r * k_head_bytes_, head_dim_);
    kv_encode_head(format_.v, v + size_t(h) * head_dim_, v_.data() + r * v_head_bytes_, head_dim_);
  }
}

KvSpan StaticKvCache::span(int layer, int32_t slot, int32_t n) const {
  const size_t r = record_index(layer, slot, 0, 0);
  KvSpan s;
  s.k = k_.data() + r * k_head_bytes_;
  s.v = v_.data() + r * v_head_bytes_;
  s.k_pos_stride = k_head_bytes_;
  s.k_head_stride = size_t(capacity_) * k_head_bytes_;
  s.v_pos_stride = v_head_bytes_;
  s.v_head_stride = size_t(capacity_) * v_head_bytes_;
  s.n = std::min(n, capacity_);
  return s;
}

int32_t StaticKvCache::length(int32_t slot) const {
  const uint8_t* m = mask(slot);
  int32_t n = 0;
  while (n < capacity_ && m[n]) ++n;
  return n;
}

void StaticKvCache::truncate(int32_t slot, int32_t length) {
  if (slot < 0 || slot >= slots_ || length < 0 || length > capacity_)
    throw std::out_of_range("static KV cache: truncate slot " + std::to_string(slot) + " to " +
                            std::to_string(length) + " (slots " + std::to_string(slots_) +
                            ", capacity " + std::to_string(capacity_) + ")");
  std::fill(mask(slot) + length, mask(slot) + capacity_, uint8_t{0});
}

void StaticKvCache::poison_unfilled(uint8_t byte) {
  for (int l = 0; l < n_layer_; ++l)
    for (int32_t s = 0; s < slots_; ++s)
      for (int32_t p = 0; p < capacity_; ++p) {
        if (mask(s)[p]) continue;
        for (int h = 0; h < n_kv_head_; ++h) {
          const size_t r = record_index(l, s, h, p);
          std::memset(k_.data() + r * k_head_bytes_, byte, k_head_bytes_);
          std::memset(v_.data() + r * v_head_bytes_, byte, v_head_bytes_);
        }
      }
}

}  // namespace kvforge
