// The simplest KV store: for each layer one buffer holding every sequence's
// positions back to back, allocated once.
//
// Layout per layer (K and V alike): [n_seqs][capacity][n_kv_head][head_dim],
// head_dim fastest. A position's K row for all heads is one contiguous
// kv_dim run, so writing a token is one copy; a head's keys are read with a
// stride of kv_dim elements.
#pragma once

#include <cstdint>
#include <vector>

#include "model/kv_store.h"
#include "model/model_config.h"

namespace kvforge {

class ContiguousKvCache final : public KvStore {
 public:
  ContiguousKvCache(const ModelConfig& config, int32_t capacity, KvDtype dtype, int32_t n_seqs = 1);

  KvDtype dtype() const override { return dtype_; }
  int32_t capacity() const { return capacity_; }
  int32_t n_seqs() const { return n_seqs_; }
  size_t bytes() const { return k_.size() * 2; }

  void write(int layer, int32_t seq, int32_t pos, const float* k, const float* v) override;
  void spans(int layer, int32_t seq, int32_t n, std::vector<KvSpan>& out) const override;

 private:
  size_t offset(int layer, int32_t seq, int32_t pos) const;

  int n_layer_;
  int kv_dim_;
  int head_dim_;
  int32_t capacity_;
  int32_t n_seqs_;
  KvDtype dtype_;
  size_t row_bytes_;
  std::vector<uint8_t> k_;  // [n_layer][n_seqs][capacity][kv_dim] elements of dtype_
  std::vector<uint8_t> v_;  // same shape as k_
};

}  // namespace kvforge
