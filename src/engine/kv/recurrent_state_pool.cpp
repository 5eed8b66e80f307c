#include "engine/kv/recurrent_state_pool.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace kvforge {

RecurrentLayers::RecurrentLayers(const ModelConfig& config)
    : shape(config.linear), index(size_t(config.n_layer), -1) {
  for (int l = 0; l < config.n_layer; ++l)
    if (config.recurrent(l)) index[size_t(l)] = count++;
}

RecurrentStatePool::RecurrentStatePool(const ModelConfig& config, int32_t n_slots)
    : layers_(config) {
  if (layers_.count == 0 || n_slots <= 0) return;
  n_slots_ = n_slots;
  bytes_per_slot_ = size_t(layers_.count) * layers_.shape.state_floats() * sizeof(float);
  data_.assign(size_t(n_slots) * size_t(layers_.count) * layers_.shape.state_floats(), 0.0f);
  n_past_.assign(size_t(n_slots) * size_t(layers_.count), 0);
  for (int32_t s = n_slots - 1; s >= 0; --s) free_.push_back(s);
}

int32_t RecurrentStatePool::allocate() {
  if (free_.empty())
    throw std::length_error("recurrent state pool: all " + std::to_string(n_slots_) +
                            " slots are in use");
  const int32_t slot = free_.back();
  free_.pop_back();
  std::fill_n(n_past_.begin() + ptrdiff_t(slot) * layers_.count, layers_.count, 0);
  return slot;
}

void RecurrentStatePool::release(int32_t slot) {
  if (slot < 0 || slot >= n_slots_ || std::find(free_.begin(), free_.end(), slot) != free_.end())
    throw std::logic_error("recurrent state pool: slot " + std::to_string(slot) +
                           " released twice or never allocated");
  free_.push_back(slot);
}

void RecurrentStatePool::copy(int32_t from, int32_t to) {
  const size_t floats = size_t(layers_.count) * layers_.shape.state_floats();
  for (int32_t s : {from, to})
    if (s < 0 || s >= n_slots_)
      throw std::out_of_range("recurrent state pool: slot " + std::to_string(s) + " out of range");
  std::copy_n(data_.begin() + ptrdiff_t(size_t(from) * floats), floats,
              data_.begin() + ptrdiff_t(size_t(to) * floats));
  std::copy_n(n_past_.begin() + ptrdiff_t(from) * layers_.count, layers_.count,
              n_past_.begin() + ptrdiff_t(to) * layers_.count);
}

void RecurrentStatePool::load(int32_t slot, std::span<const uint8_t> bytes, int32_t n_past) {
  if (slot < 0 || slot >= n_slots_ || bytes.size() != bytes_per_slot_)
    throw std::invalid_argument("recurrent state pool: " + std::to_string(bytes.size()) +
                                " bytes for slot " + std::to_string(slot) + " of " +
                                std::to_string(bytes_per_slot_));
  std::memcpy(data_.data() + size_t(slot) * (bytes_per_slot_ / sizeof(float)), bytes.data(),
              bytes.size());
  std::fill_n(n_past_.begin() + ptrdiff_t(slot) * layers_.count, layers_.count, n_past);
}

size_t RecurrentStatePool::record(int layer, int32_t slot) const {
  if (layer < 0 || size_t(layer) >= layers_.index.size() || layers_.index[size_t(layer)] < 0 ||
      slot < 0 || slot >= n_slots_)
    throw std::out_of_range("recurrent state pool: layer " + std::to_string(layer) + ", slot " +
                            std::to_string(slot) + " holds no recurrent state");
  return size_t(slot) * size_t(layers_.count) + size_t(layers_.index[size_t(layer)]);
}

RecurrentState RecurrentStatePool::state(int layer, int32_t slot) {
  const size_t r = record(layer, slot);
  float* base = data_.data() + r * layers_.shape.state_floats();
  return {base, base + layers_.shape.conv_floats(), n_past_.data() + r};
}

}  // namespace kvforge
