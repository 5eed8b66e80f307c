#include "engine/static_pipeline/static_kv_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace kvforge {
namespace {

// `config` with only `n_layer` attention layers shaped as `layer` (head
// size, KV heads), all keeping K/V: the shape of one group's records (the
// recurrent states are the cache's own pool).
ModelConfig group_config(const ModelConfig& config, int n_layer, int layer) {
  ModelConfig g = config;
  g.n_layer = n_layer;
  g.head_dim = config.layer_head_dim(layer);
  g.n_kv_head = config.layer_n_kv_head(layer);
  g.head_dim_swa = 0;
  g.n_kv_head_swa = 0;
  g.sliding_window = 0;
  g.swa_layers.clear();
  g.n_kv_shared = 0;
  g.recurrent_layers.clear();
  return g;
}

}  // namespace

StaticKvCache::StaticKvCache(const ModelConfig& config, int32_t capacity, int32_t slots,
                             KvFormat format)
    : n_layer_(config.n_layer),
      capacity_(capacity),
      slots_(slots),
      format_(format),
      states_(config, slots) {
  if (capacity <= 0 || slots <= 0)
    throw std::invalid_argument("StaticKvCache: capacity " + std::to_string(capacity) +
                                " and slots " + std::to_string(slots) + " must be positive");
  int n_full = 0, n_ring = 0, full_layer = 0, ring_layer = 0;  // the last of each kind
  for (int l = 0; l < n_layer_; ++l) {
    const int32_t w = config.window(l);
    windows_.push_back(w);
    shared_.push_back(!config.recurrent(l) && !config.owns_kv(l));
    group_index_.push_back(!config.owns_kv(l) ? -1 : w > 0 ? n_ring++ : n_full++);
    if (w > 0) ring_ = std::min(w, capacity);
    (w > 0 ? ring_layer : full_layer) = l;
  }
  if (n_full > 0) full_.emplace(group_config(config, n_full, full_layer), capacity, format, slots);
  if (n_ring > 0) {
    ring_kv_.emplace(group_config(config, n_ring, ring_layer), ring_, format, slots);
    tags_.assign(size_t(n_ring) * size_t(slots) * size_t(ring_), -1);
  }
  mask_.assign(size_t(slots) * size_t(capacity), 0);
  // Allocated once, resident before the first step.
  if (full_) full_->prefault();
  if (ring_kv_) ring_kv_->prefault();
}

size_t StaticKvCache::bytes() const {
  return (full_ ? full_->bytes() : 0) + (ring_kv_ ? ring_kv_->bytes() : 0) + states_.bytes() +
         mask_.size() + tags_.size() * sizeof(int32_t);
}

void StaticKvCache::check(int layer, int32_t slot, int32_t pos, int32_t max_pos,
                          const char* what) const {
  if (layer >= 0 && layer < n_layer_ && group_index_[size_t(layer)] < 0)
    throw std::logic_error(
        "static KV cache: " + std::string(what) + " layer " + std::to_string(layer) +
        (shared_[size_t(layer)] ? ", a layer reading another layer's K/V (it holds none)"
                                : ", a linear-attention layer (it holds no K/V)"));
  if (layer < 0 || layer >= n_layer_ || slot < 0 || slot >= slots_ || pos < 0 || pos > max_pos)
    throw std::out_of_range(
        std::string("static KV cache: ") + what + " layer " + std::to_string(layer) + ", slot " +
        std::to_string(slot) + ", position " + std::to_string(pos) + " outside " +
        std::to_string(slots_) + " slots x " + std::to_string(capacity_) + " positions");
}

void StaticKvCache::write(int layer, int32_t slot, int32_t pos, const float* k, const float* v) {
  check(layer, slot, pos, capacity_ - 1, "write of");
  const int g = group_index_[size_t(layer)];
  if (windows_[size_t(layer)] > 0) {
    ring_kv_->write(g, slot, pos % ring_, k, v);
    tags(g, slot)[pos % ring_] = pos;
  } else {
    full_->write(g, slot, pos, k, v);
  }
  mask(slot)[pos] = 1;
}

void StaticKvCache::spans(int layer, int32_t slot, int32_t first, int32_t n,
                          std::vector<KvSpan>& out) const {
  check(layer, slot, n, capacity_, "read of");
  if (first < 0 || first > n)
    throw std::out_of_range("static KV cache: positions [" + std::to_string(first) + ", " +
                            std::to_string(n) + ") requested");
  if (n > 0 && !mask(slot)[n - 1])
    throw std::logic_error("static KV cache: position " + std::to_string(n - 1) + " of slot " +
                           std::to_string(slot) + " read before it was written (" +
                           std::to_string(length(slot)) + " filled)");
  const int g = group_index_[size_t(layer)];
  if (windows_[size_t(layer)] == 0) {
    full_->spans(g, slot, first, n, out);
    return;
  }
  if (n - first > ring_)
    throw std::logic_error("static KV cache: positions [" + std::to_string(first) + ", " +
                           std::to_string(n) + ") of layer " + std::to_string(layer) +
                           " requested from its ring of " + std::to_string(ring_) + " positions");
  const int32_t* held = tags(g, slot);
  for (int32_t p = first; p < n; ++p)
    if (held[p % ring_] != p)
      throw std::logic_error("static KV cache: position " + std::to_string(p) + " of slot " +
                             std::to_string(slot) + ", layer " + std::to_string(layer) +
                             " is no longer in its ring of " + std::to_string(ring_) +
                             " positions (the cell holds " + std::to_string(held[p % ring_]) + ")");
  KvSpan two[2];
  const int count = ring_spans(layer, slot, first, n, two);
  out.insert(out.end(), two, two + count);
}

int StaticKvCache::ring_spans(int layer, int32_t slot, int32_t first, int32_t n,
                              KvSpan out[2]) const {
  if (n <= first) return 0;
  const KvSpan whole = ring_kv_->span(group_index_[size_t(layer)], slot, ring_);
  const auto cells = [&](int32_t from, int32_t count) {
    KvSpan s = whole;
    s.k += size_t(from) * s.k_pos_stride;
    s.v += size_t(from) * s.v_pos_stride;
    s.n = count;
    return s;
  };
  const int32_t start = first % ring_;
  const int32_t head = std::min(n - first, ring_ - start);  // up to the ring's end
  out[0] = cells(start, head);
  if (head == n - first) return 1;
  out[1] = cells(0, n - first - head);  // the wrap: cells from 0 on
  return 2;
}

KvSpan StaticKvCache::span(int layer, int32_t slot, int32_t n) const {
  check(layer, slot, n, capacity_, "span of");
  if (windows_[size_t(layer)] > 0)
    throw std::logic_error("static KV cache: layer " + std::to_string(layer) + " is a ring of " +
                           std::to_string(ring_) + " positions, not one span of the capacity");
  return full_->span(group_index_[size_t(layer)], slot, n);
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
  const size_t n_ring = ring_ > 0 ? tags_.size() / (size_t(slots_) * size_t(ring_)) : 0;
  for (size_t g = 0; g < n_ring; ++g) {
    int32_t* t = tags(int(g), slot);
    for (int32_t c = 0; c < ring_; ++c)
      if (t[c] >= length) t[c] = -1;
  }
}

bool StaticKvCache::holds(int32_t slot, int32_t first, int32_t n) const {
  if (slot < 0 || slot >= slots_ || first < 0 || n > capacity_) return false;
  for (int32_t p = first; p < n; ++p)
    if (!mask(slot)[p]) return false;
  if (ring_ == 0 || n <= first) return true;
  if (n - first > ring_) return false;
  const size_t n_ring = tags_.size() / (size_t(slots_) * size_t(ring_));
  for (size_t g = 0; g < n_ring; ++g) {
    const int32_t* t = tags(int(g), slot);
    for (int32_t p = first; p < n; ++p)
      if (t[p % ring_] != p) return false;
  }
  return true;
}

void StaticKvCache::poison_unfilled(uint8_t byte) {
  for (int l = 0; l < n_layer_; ++l) {
    const int g = group_index_[size_t(l)];
    if (g < 0) continue;
    for (int32_t s = 0; s < slots_; ++s) {
      if (windows_[size_t(l)] == 0) {
        for (int32_t p = 0; p < capacity_; ++p)
          if (!mask(s)[p]) full_->fill_position(g, s, p, byte);
        continue;
      }
      const int32_t* t = tags(g, s);
      for (int32_t c = 0; c < ring_; ++c)
        if (t[c] < 0 || !mask(s)[t[c]]) ring_kv_->fill_position(g, s, c, byte);
    }
  }
}

size_t StaticKvCache::run_bytes(int32_t n) const {
  return full_ ? size_t(n_layer_) * full_->run_bytes(n) : 0;
}

bool StaticKvCache::runs_supported() const {
  return !ring_kv_ && full_ && states_.n_slots() == 0 &&
         std::none_of(shared_.begin(), shared_.end(), [](bool s) { return s; });
}

void StaticKvCache::export_run(int32_t slot, int32_t first, int32_t n,
                               std::span<uint8_t> out) const {
  if (!runs_supported() || out.size() != run_bytes(n))
    throw std::logic_error("static KV cache: export_run of " + std::to_string(out.size()) +
                           " bytes, expected " + std::to_string(run_bytes(n)) +
                           " (and no sliding-window, recurrent or shared-KV layers)");
  if (first < 0 || first + n > length(slot))
    throw std::out_of_range("static KV cache: export_run of positions [" + std::to_string(first) +
                            ", " + std::to_string(first + n) + ") of slot " + std::to_string(slot) +
                            ", which holds " + std::to_string(length(slot)));
  const size_t per_layer = full_->run_bytes(n);
  for (int l = 0; l < n_layer_; ++l)
    full_->copy_out(l, slot, first, n, out.data() + size_t(l) * per_layer);
}

void StaticKvCache::import_run(int32_t slot, int32_t first, int32_t n,
                               std::span<const uint8_t> in) {
  if (!runs_supported() || in.size() != run_bytes(n))
    throw std::logic_error("static KV cache: import_run of " + std::to_string(in.size()) +
                           " bytes, expected " + std::to_string(run_bytes(n)) +
                           " (and no sliding-window, recurrent or shared-KV layers)");
  if (first != length(slot) || first + n > capacity_)
    throw std::out_of_range("static KV cache: import_run at " + std::to_string(first) +
                            " into slot " + std::to_string(slot) + " of length " +
                            std::to_string(length(slot)) + ", capacity " +
                            std::to_string(capacity_));
  const size_t per_layer = full_->run_bytes(n);
  for (int l = 0; l < n_layer_; ++l)
    full_->copy_in(l, slot, first, n, in.data() + size_t(l) * per_layer);
  std::fill(mask(slot) + first, mask(slot) + first + n, uint8_t{1});
}

}  // namespace kvforge
