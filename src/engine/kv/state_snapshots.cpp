#include "engine/kv/state_snapshots.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace kvforge {

StateSnapshots::StateSnapshots(const ModelConfig& config, int32_t n_entries) : layers_(config) {
  if (layers_.count == 0 || n_entries <= 0) return;
  entries_.resize(size_t(n_entries));
  data_.assign(size_t(n_entries) * size_t(layers_.count) * layers_.shape.state_floats(), 0.0f);
}

StateSnapshots::Hit StateSnapshots::longest(std::span<const int32_t> tokens,
                                            int32_t max_length) const {
  Hit best;
  for (size_t e = 0; e < entries_.size(); ++e) {
    const Entry& x = entries_[e];
    const int32_t n = int32_t(x.tokens.size());
    if (!x.used || x.pending || n > max_length || n <= best.length || size_t(n) > tokens.size())
      continue;
    if (std::equal(x.tokens.begin(), x.tokens.end(), tokens.begin())) best = {int32_t(e), n};
  }
  return best;
}

bool StateSnapshots::has(std::span<const int32_t> prefix) const {
  for (const Entry& x : entries_)
    if (x.used && std::equal(x.tokens.begin(), x.tokens.end(), prefix.begin(), prefix.end()))
      return true;
  return false;
}

int32_t StateSnapshots::take(std::span<const int32_t> prefix) {
  int32_t pick = -1;
  for (size_t e = 0; e < entries_.size(); ++e) {
    const Entry& x = entries_[e];
    if (x.pending) continue;
    if (!x.used) {
      pick = int32_t(e);
      break;
    }
    if (pick < 0 || x.last_use < entries_[size_t(pick)].last_use) pick = int32_t(e);
  }
  if (pick < 0) return -1;
  Entry& x = entries_[size_t(pick)];
  x.tokens.assign(prefix.begin(), prefix.end());
  x.pending = x.used = true;
  x.last_use = ++clock_;
  return pick;
}

void StateSnapshots::finish(int32_t entry) {
  entries_.at(size_t(entry)).pending = false;
  if (recording_) finished_.push_back(entry);
}

std::vector<int32_t> StateSnapshots::take_finished() {
  std::vector<int32_t> out;
  out.swap(finished_);
  return out;
}

std::span<const uint8_t> StateSnapshots::bytes_of(int32_t entry) const {
  const size_t floats = size_t(layers_.count) * layers_.shape.state_floats();
  const float* base = data_.data() + size_t(entry) * floats;
  if (entry < 0 || size_t(entry) >= entries_.size())
    throw std::out_of_range("state snapshots: no entry " + std::to_string(entry));
  return {reinterpret_cast<const uint8_t*>(base), floats * sizeof(float)};
}

void StateSnapshots::fill(int32_t entry, std::span<const uint8_t> bytes) {
  const std::span<const uint8_t> into = bytes_of(entry);
  if (bytes.size() != into.size())
    throw std::invalid_argument("state snapshots: " + std::to_string(bytes.size()) +
                                " bytes for an entry of " + std::to_string(into.size()));
  std::memcpy(const_cast<uint8_t*>(into.data()), bytes.data(), bytes.size());
}

void StateSnapshots::drop(int32_t entry) {
  Entry& x = entries_.at(size_t(entry));
  x.tokens.clear();
  x.pending = x.used = false;
}

float* StateSnapshots::record(int layer, int32_t entry) {
  if (layer < 0 || size_t(layer) >= layers_.index.size() || layers_.index[size_t(layer)] < 0 ||
      entry < 0 || size_t(entry) >= entries_.size())
    throw std::out_of_range("state snapshots: layer " + std::to_string(layer) + ", entry " +
                            std::to_string(entry) + " holds no recurrent state");
  const size_t r = size_t(entry) * size_t(layers_.count) + size_t(layers_.index[size_t(layer)]);
  return data_.data() + r * layers_.shape.state_floats();
}

void StateSnapshots::target(int layer, int32_t entry, RecurrentState& into) {
  float* base = record(layer, entry);
  into.snap_conv = base;
  into.snap_matrix = base + layers_.shape.conv_floats();
  into.snapshot_at = int32_t(entries_[size_t(entry)].tokens.size());
}

void StateSnapshots::restore(int32_t entry, RecurrentStatePool& pool, int32_t slot) {
  Entry& x = entries_.at(size_t(entry));
  if (!x.used || x.pending)
    throw std::logic_error("state snapshots: entry " + std::to_string(entry) +
                           " restored before it was finished");
  x.last_use = ++clock_;
  for (size_t l = 0; l < layers_.index.size(); ++l) {
    if (layers_.index[l] < 0) continue;
    const RecurrentState st = pool.state(int(l), slot);
    const float* src = record(int(l), entry);
    std::copy_n(src, layers_.shape.conv_floats(), st.conv);
    std::copy_n(src + layers_.shape.conv_floats(), layers_.shape.matrix_floats(), st.matrix);
    *st.n_past = int32_t(x.tokens.size());
  }
}

}  // namespace kvforge
