#include "engine/kv/contiguous_kv_cache.h"

#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

namespace kvforge {

ContiguousKvCache::ContiguousKvCache(const ModelConfig& config, int32_t capacity, KvFormat format,
                                     int32_t n_seqs)
    : n_layer_(config.n_layer),
      capacity_(capacity),
      n_seqs_(n_seqs),
      format_(format),
      states_(config, n_seqs) {
  if (capacity <= 0 || n_seqs <= 0)
    throw std::invalid_argument("ContiguousKvCache: capacity and n_seqs must be positive");
  const size_t positions = size_t(n_seqs) * size_t(capacity);  // per KV head
  std::vector<int> all(static_cast<size_t>(n_layer_));
  std::iota(all.begin(), all.end(), 0);
  layers_.resize(all.size());
  size_t k_total = 0, v_total = 0;
  lay_out_runs(config, all, positions, format, layers_, k_total, v_total);
  k_ = HugePageBuffer(k_total);
  v_ = HugePageBuffer(v_total);
}

void ContiguousKvCache::check(int layer, int32_t seq, int32_t pos) const {
  if (layer < 0 || layer >= n_layer_ || seq < 0 || seq >= n_seqs_ || pos < 0 || pos >= capacity_)
    throw std::out_of_range("KV cache: layer " + std::to_string(layer) + ", sequence " +
                            std::to_string(seq) + ", position " + std::to_string(pos) +
                            " outside capacity " + std::to_string(capacity_));
}

size_t ContiguousKvCache::slot(int layer, int32_t seq, int head, int32_t pos) const {
  const size_t n_kv_head = size_t(layers_[size_t(layer)].n_kv_head);
  return (size_t(seq) * n_kv_head + size_t(head)) * size_t(capacity_) + size_t(pos);
}

uint8_t* ContiguousKvCache::k_at(int layer, int32_t seq, int head, int32_t pos) const {
  const KvLayerRun& r = layers_[size_t(layer)];
  return const_cast<uint8_t*>(k_.data()) + r.k_offset +
         slot(layer, seq, head, pos) * r.k_head_bytes;
}

uint8_t* ContiguousKvCache::v_at(int layer, int32_t seq, int head, int32_t pos) const {
  const KvLayerRun& r = layers_[size_t(layer)];
  return const_cast<uint8_t*>(v_.data()) + r.v_offset +
         slot(layer, seq, head, pos) * r.v_head_bytes;
}

void ContiguousKvCache::write(int layer, int32_t seq, int32_t pos, const float* k, const float* v) {
  check(layer, seq, pos);
  const int d = layers_[size_t(layer)].head_dim;
  for (int h = 0; h < layers_[size_t(layer)].n_kv_head; ++h) {
    kv_encode_head(format_.k, k + size_t(h) * size_t(d), k_at(layer, seq, h, pos), d);
    kv_encode_head(format_.v, v + size_t(h) * size_t(d), v_at(layer, seq, h, pos), d);
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
  const KvLayerRun& r = layers_[size_t(layer)];
  KvSpan span;
  span.k = k_at(layer, seq, 0, 0);
  span.v = v_at(layer, seq, 0, 0);
  span.k_pos_stride = r.k_head_bytes;
  span.k_head_stride = size_t(capacity_) * r.k_head_bytes;
  span.v_pos_stride = r.v_head_bytes;
  span.v_head_stride = size_t(capacity_) * r.v_head_bytes;
  span.n = n;
  return span;
}

void ContiguousKvCache::fill_position(int layer, int32_t seq, int32_t pos, uint8_t byte) {
  check(layer, seq, pos);
  const KvLayerRun& r = layers_[size_t(layer)];
  for (int h = 0; h < r.n_kv_head; ++h) {
    std::memset(k_at(layer, seq, h, pos), byte, r.k_head_bytes);
    std::memset(v_at(layer, seq, h, pos), byte, r.v_head_bytes);
  }
}

void ContiguousKvCache::prefault() {
  std::memset(k_.data(), 0, k_.size());
  std::memset(v_.data(), 0, v_.size());
}

size_t ContiguousKvCache::run_bytes(int32_t n, int layer) const {
  const KvLayerRun& r = layers_.at(size_t(layer));
  return size_t(r.n_kv_head) * size_t(n) * (r.k_head_bytes + r.v_head_bytes);
}

void ContiguousKvCache::copy_out(int layer, int32_t seq, int32_t first, int32_t n,
                                 uint8_t* out) const {
  check(layer, seq, first);
  check(layer, seq, first + n - 1);
  const KvLayerRun& r = layers_[size_t(layer)];
  const size_t k_run = size_t(n) * r.k_head_bytes, v_run = size_t(n) * r.v_head_bytes;
  for (int h = 0; h < r.n_kv_head; ++h)
    std::memcpy(out + size_t(h) * k_run, k_at(layer, seq, h, first), k_run);
  out += size_t(r.n_kv_head) * k_run;
  for (int h = 0; h < r.n_kv_head; ++h)
    std::memcpy(out + size_t(h) * v_run, v_at(layer, seq, h, first), v_run);
}

void ContiguousKvCache::copy_in(int layer, int32_t seq, int32_t first, int32_t n,
                                const uint8_t* in) {
  check(layer, seq, first);
  check(layer, seq, first + n - 1);
  const KvLayerRun& r = layers_[size_t(layer)];
  const size_t k_run = size_t(n) * r.k_head_bytes, v_run = size_t(n) * r.v_head_bytes;
  for (int h = 0; h < r.n_kv_head; ++h)
    std::memcpy(k_at(layer, seq, h, first), in + size_t(h) * k_run, k_run);
  in += size_t(r.n_kv_head) * k_run;
  for (int h = 0; h < r.n_kv_head; ++h)
    std::memcpy(v_at(layer, seq, h, first), in + size_t(h) * v_run, v_run);
}

}  // namespace kvforge
