#include "engine/kv/contiguous_kv_cache.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace kvforge {

ContiguousKvCache::ContiguousKvCache(const ModelConfig& config, int32_t capacity, KvFormat format,
                                     int32_t n_seqs)
    : n_layer_(config.n_layer),
      n_kv_head_(config.n_kv_head),
      head_dim_(config.head_dim),
      capacity_(capacity),
      n_seqs_(n_seqs),
      format_(format),
      k_head_bytes_(kv_head_bytes(format.k, config.head_dim)),
      v_head_bytes_(kv_head_bytes(format.v, config.head_dim)),
      states_(config, n_seqs) {
  if (capacity <= 0 || n_seqs <= 0)
    throw std::invalid_argument("ContiguousKvCache: capacity and n_seqs must be positive");
  const size_t positions = size_t(n_layer_) * size_t(n_seqs) * size_t(capacity);
  k_ = HugePageBuffer(positions * size_t(n_kv_head_) * k_head_bytes_);
  v_ = HugePageBuffer(positions * size_t(n_kv_head_) * v_head_bytes_);
}

void ContiguousKvCache::check(int layer, int32_t seq, int32_t pos) const {
  if (layer < 0 || layer >= n_layer_ || seq < 0 || seq >= n_seqs_ || pos < 0 || pos >= capacity_)
    throw std::out_of_range("KV cache: layer " + std::to_string(layer) + ", sequence " +
                            std::to_string(seq) + ", position " + std::to_string(pos) +
                            " outside capacity " + std::to_string(capacity_));
}

size_t ContiguousKvCache::slot(int layer, int32_t seq, int head, int32_t pos) const {
  return ((size_t(layer) * size_t(n_seqs_) + size_t(seq)) * size_t(n_kv_head_) + size_t(head)) *
             size_t(capacity_) +
         size_t(pos);
}

void ContiguousKvCache::write(int layer, int32_t seq, int32_t pos, const float* k, const float* v) {
  check(layer, seq, pos);
  for (int h = 0; h < n_kv_head_; ++h) {
    const size_t s = slot(layer, seq, h, pos);
    kv_encode_head(format_.k, k + size_t(h) * head_dim_, k_.data() + s * k_head_bytes_, head_dim_);
    kv_encode_head(format_.v, v + size_t(h) * head_dim_, v_.data() + s * v_head_bytes_, head_dim_);
  }
}

void ContiguousKvCache::spans(int layer, int32_t seq, int32_t first, int32_t n,
                              std::vector<KvSpan>& out) const {
  if (first < 0 || first > n)
    throw std::out_of_range("KV cache: positions [" + std::to_string(first) + ", " +
                            std::to_string(n) + ") requested");
  KvSpan s = span(layer, seq, n);
  s.k += size_t(first) * s.k_pos_stride;
  s.v += size_t(first) * s.v_pos_stride;
  s.n = n - first;
  out.push_back(s);
}

KvSpan ContiguousKvCache::span(int layer, int32_t seq, int32_t n) const {
  if (n > capacity_)
    throw std::out_of_range("KV cache: " + std::to_string(n) + " positions requested, capacity " +
                            std::to_string(capacity_));
  check(layer, seq, 0);
  const size_t s = slot(layer, seq, 0, 0);
  KvSpan span;
  span.k = k_.data() + s * k_head_bytes_;
  span.v = v_.data() + s * v_head_bytes_;
  span.k_pos_stride = k_head_bytes_;
  span.k_head_stride = size_t(capacity_) * k_head_bytes_;
  span.v_pos_stride = v_head_bytes_;
  span.v_head_stride = size_t(capacity_) * v_head_bytes_;
  span.n = n;
  return span;
}

void ContiguousKvCache::fill_position(int layer, int32_t seq, int32_t pos, uint8_t byte) {
  check(layer, seq, pos);
  for (int h = 0; h < n_kv_head_; ++h) {
    const size_t s = slot(layer, seq, h, pos);
    std::memset(k_.data() + s * k_head_bytes_, byte, k_head_bytes_);
    std::memset(v_.data() + s * v_head_bytes_, byte, v_head_bytes_);
  }
}

void ContiguousKvCache::prefault() {
  std::memset(k_.data(), 0, k_.size());
  std::memset(v_.data(), 0, v_.size());
}

size_t ContiguousKvCache::run_bytes(int32_t n) const {
  return size_t(n_kv_head_) * size_t(n) * (k_head_bytes_ + v_head_bytes_);
}

void ContiguousKvCache::copy_out(int layer, int32_t seq, int32_t first, int32_t n,
                                 uint8_t* out) const {
  check(layer, seq, first);
  check(layer, seq, first + n - 1);
  const size_t k_run = size_t(n) * k_head_bytes_, v_run = size_t(n) * v_head_bytes_;
  for (int h = 0; h < n_kv_head_; ++h)
    std::memcpy(out + size_t(h) * k_run, k_.data() + slot(layer, seq, h, first) * k_head_bytes_,
                k_run);
  out += size_t(n_kv_head_) * k_run;
  for (int h = 0; h < n_kv_head_; ++h)
    std::memcpy(out + size_t(h) * v_run, v_.data() + slot(layer, seq, h, first) * v_head_bytes_,
                v_run);
}

void ContiguousKvCache::copy_in(int layer, int32_t seq, int32_t first, int32_t n,
                                const uint8_t* in) {
  check(layer, seq, first);
  check(layer, seq, first + n - 1);
  const size_t k_run = size_t(n) * k_head_bytes_, v_run = size_t(n) * v_head_bytes_;
  for (int h = 0; h < n_kv_head_; ++h)
    std::memcpy(k_.data() + slot(layer, seq, h, first) * k_head_bytes_, in + size_t(h) * k_run,
                k_run);
  in += size_t(n_kv_head_) * k_run;
  for (int h = 0; h < n_kv_head_; ++h)
    std::memcpy(v_.data() + slot(layer, seq, h, first) * v_head_bytes_, in + size_t(h) * v_run,
                v_run);
}

}  // namespace kvforge
