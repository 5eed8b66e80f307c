#include "engine/kv/contiguous_kv_cache.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "core/formats/row_codec.h"

namespace kvforge {

ContiguousKvCache::ContiguousKvCache(const ModelConfig& config, int32_t capacity, KvDtype dtype,
                                     int32_t n_seqs)
    : n_layer_(config.n_layer),
      kv_dim_(config.kv_dim()),
      head_dim_(config.head_dim),
      capacity_(capacity),
      n_seqs_(n_seqs),
      dtype_(dtype),
      row_bytes_(size_t(config.kv_dim()) * kv_dtype_bytes(dtype)) {
  if (capacity <= 0 || n_seqs <= 0)
    throw std::invalid_argument("ContiguousKvCache: capacity and n_seqs must be positive");
  const size_t total = size_t(n_layer_) * size_t(n_seqs) * size_t(capacity) * row_bytes_;
  k_.assign(total, 0);
  v_.assign(total, 0);
}

size_t ContiguousKvCache::offset(int layer, int32_t seq, int32_t pos) const {
  if (layer < 0 || layer >= n_layer_ || seq < 0 || seq >= n_seqs_ || pos < 0 || pos >= capacity_)
    throw std::out_of_range("KV cache: layer " + std::to_string(layer) + ", sequence " +
                            std::to_string(seq) + ", position " + std::to_string(pos) +
                            " outside capacity " + std::to_string(capacity_));
  return ((size_t(layer) * size_t(n_seqs_) + size_t(seq)) * size_t(capacity_) + size_t(pos)) *
         row_bytes_;
}

void ContiguousKvCache::write(int layer, int32_t seq, int32_t pos, const float* k, const float* v) {
  const size_t off = offset(layer, seq, pos);
  if (dtype_ == KvDtype::F32) {
    std::memcpy(k_.data() + off, k, row_bytes_);
    std::memcpy(v_.data() + off, v, row_bytes_);
  } else {
    quantize_row(GgmlType::F16, k, k_.data() + off, kv_dim_);
    quantize_row(GgmlType::F16, v, v_.data() + off, kv_dim_);
  }
}

void ContiguousKvCache::spans(int layer, int32_t seq, int32_t n, std::vector<KvSpan>& out) const {
  if (n > capacity_)
    throw std::out_of_range("KV cache: " + std::to_string(n) + " positions requested, capacity " +
                            std::to_string(capacity_));
  const size_t off = offset(layer, seq, 0);
  out.push_back(KvSpan{k_.data() + off, v_.data() + off, row_bytes_,
                       size_t(head_dim_) * kv_dtype_bytes(dtype_), n});
}

}  // namespace kvforge
