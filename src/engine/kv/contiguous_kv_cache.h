// The simplest KV store: for each layer one buffer holding every sequence's
// positions back to back, allocated once.
//
// Layout per layer (K and V alike, each in its own format):
// [n_seqs][capacity][n_kv_head] head records (core/formats/kv_format.h),
// record bytes fastest. A position's records for all heads are one
// contiguous run, so writing a token touches one run; a head's keys are read
// with a stride of one position.
#pragma once

#include <cstdint>
#include <vector>

#include "model/kv_store.h"
#include "model/model_config.h"

namespace kvforge {

class ContiguousKvCache final : public KvStore {
 public:
  ContiguousKvCache(const ModelConfig& config, int32_t capacity, KvFormat format,
                    int32_t n_seqs = 1);

  KvFormat format() const override { return format_; }
  int32_t capacity() const { return capacity_; }
  int32_t n_seqs() const { return n_seqs_; }
  size_t bytes() const { return k_.size() + v_.size(); }

  void write(int layer, int32_t seq, int32_t pos, const float* k, const float* v) override;
  void spans(int layer, int32_t seq, int32_t n, std::vector<KvSpan>& out) const override;

 private:
  void check(int layer, int32_t seq, int32_t pos) const;
  // Index of (layer, seq, pos) in units of one position's records.
  size_t slot(int layer, int32_t seq, int32_t pos) const;

  int n_layer_;
  int n_kv_head_;
  int head_dim_;
  int32_t capacity_;
  int32_t n_seqs_;
  KvFormat format_;
  size_t k_head_bytes_, v_head_bytes_;  // one head record
  std::vector<uint8_t> k_;              // [n_layer][n_seqs][capacity][n_kv_head] K records
  std::vector<uint8_t> v_;              // [n_layer][n_seqs][capacity][n_kv_head] V records
};

}  // namespace kvforge
