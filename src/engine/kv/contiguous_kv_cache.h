// The simplest KV store: for each layer one buffer holding every sequence's
// positions back to back, allocated once.
//
// Layout per layer (K and V alike, each in its own format):
// [n_seqs][n_kv_head][capacity] head records (core/formats/kv_format.h),
// record bytes fastest. One kv head's keys (and values) of a sequence are
// one contiguous run, which the attention kernel, walking one kv head's
// positions in order, streams sequentially; writing a token touches
// n_kv_head records `capacity` records apart, which costs nothing next to
// the reads. (Positions outside heads, [capacity][n_kv_head], made each
// head's reads strided by the other heads' records, and long-context decode
// slower: docs/bench/design-measurements.md.)
#pragma once

#include <cstdint>
#include <vector>

#include "core/huge_page_buffer.h"
#include "core/ops/rope.h"
#include "engine/kv/kv_layer_runs.h"
#include "engine/kv/recurrent_state_pool.h"
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
  size_t bytes() const { return k_.size() + v_.size() + states_.bytes(); }

  void write(int layer, int32_t seq, int32_t pos, const float* k, const float* v) override;
  void spans(int layer, int32_t seq, int32_t first, int32_t n,
             std::vector<KvSpan>& out) const override;
  // Hybrid models: sequence i's recurrent states are slot i of the cache's own pool.
  RecurrentState recurrent_state(int layer, int32_t seq) override {
    return states_.state(layer, seq);
  }
  // Positions [0, n) of `seq` in `layer` as the one span they are.
  KvSpan span(int layer, int32_t seq, int32_t n) const;
  // Overwrites the K and V records of `pos` with `byte` (0xFF makes f32/f16
  // records NaN): for tests that prove a position is never read.
  void fill_position(int layer, int32_t seq, int32_t pos, uint8_t byte);
  // Positions [first, first + n) of `seq` in `layer` as K then V, each
  // [n_kv_head][n] records: the paged pool's layout of one block of one layer
  // when n = block_size (PagedKvCache::export_block). out/in hold
  // run_bytes(n, layer) bytes.
  size_t run_bytes(int32_t n, int layer = 0) const;
  void copy_out(int layer, int32_t seq, int32_t first, int32_t n, uint8_t* out) const;
  void copy_in(int layer, int32_t seq, int32_t first, int32_t n, const uint8_t* in);
  // Context shift (contiguous_kv_shift.cpp): moves the records of positions
  // [first + drop, n) of `seq` in `layer` down to [first, n - drop), K and V
  // bytes as they are; then rerotate_k turns K records [first, first + count)
  // by `delta` positions (kv_shift.h).
  void move_down(int layer, int32_t seq, int32_t first, int32_t drop, int32_t n);
  void rerotate_k(int layer, int32_t seq, int32_t first, int32_t count, const RopeTable& rope,
                  int32_t delta);
  // Makes every page resident now (the buffers are faulted in at first touch
  // otherwise): for the static pipeline, whose steps do no such work.
  void prefault();

 private:
  void check(int layer, int32_t seq, int32_t pos) const;
  // Index of (seq, kv head, pos) among the records of `layer`.
  size_t slot(int layer, int32_t seq, int head, int32_t pos) const;
  // The K / V record of (layer, seq, kv head, pos).
  uint8_t* k_at(int layer, int32_t seq, int head, int32_t pos) const;
  uint8_t* v_at(int layer, int32_t seq, int head, int32_t pos) const;

  int n_layer_;
  int32_t capacity_;
  int32_t n_seqs_;
  KvFormat format_;
  std::vector<KvLayerRun> layers_;  // [n_layer]
  HugePageBuffer k_;                // per layer: [n_seqs][n_kv_head][capacity] K records
  HugePageBuffer v_;                // per layer: [n_seqs][n_kv_head][capacity] V records
  RecurrentStatePool states_;       // [n_seqs] slots (none without recurrent layers)
};

}  // namespace kvforge
