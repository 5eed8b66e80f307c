// Snapshots of a hybrid model's recurrent states at block boundaries of
// prompts, for prefix caching (kv/hybrid_kv_manager.h): K/V blocks of a
// cached prefix are worth reusing only with the recurrent state after that
// prefix, which cannot be rebuilt from K/V. A snapshot holds every recurrent
// layer's conv window and matrices after tokens[0, length) and the tokens
// themselves, compared in full on lookup (no hash can serve another
// prefix's state).
//
// A fixed number of entries (each the size of a state slot); a new snapshot
// takes a free entry or evicts the least recently used finished one. One is
// taken while the step that passes its boundary runs (pending), and becomes
// findable when finished. Layout: [n_entries][n_recurrent_layers] records
// of conv_floats then matrix_floats floats, as RecurrentStatePool.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/kv/recurrent_state_pool.h"
#include "model/model_config.h"

namespace kvforge {

class StateSnapshots {
 public:
  StateSnapshots(const ModelConfig& config, int32_t n_entries);

  int32_t n_entries() const { return int32_t(entries_.size()); }
  size_t bytes() const { return data_.size() * sizeof(float); }

  // The longest finished snapshot whose tokens start `tokens` and number at
  // most max_length: {entry, length}, or {-1, 0}.
  struct Hit {
    int32_t entry = -1;
    int32_t length = 0;
  };
  Hit longest(std::span<const int32_t> tokens, int32_t max_length) const;
  // Whether a finished or pending snapshot of exactly these tokens exists.
  bool has(std::span<const int32_t> prefix) const;

  // An entry for a snapshot of `prefix` (pending: not findable yet), or -1
  // when every entry is pending.
  int32_t take(std::span<const int32_t> prefix);
  void finish(int32_t entry);
  int32_t length(int32_t entry) const { return int32_t(entries_.at(size_t(entry)).tokens.size()); }
  void drop(int32_t entry);  // a pending snapshot whose step never came

  // Where `layer`'s part of `entry` goes: snap_conv, snap_matrix and
  // snapshot_at of `into` are set (the rest of `into` kept).
  void target(int layer, int32_t entry, RecurrentState& into);
  // Copies `entry` into `slot` of `pool`: the slot's states continue after
  // the snapshot's tokens. Marks the entry used (LRU).
  void restore(int32_t entry, RecurrentStatePool& pool, int32_t slot);

  // For a lower tier (the disk: kv/disk_prefix_tier.h). After
  // record_finished(), finish() notes each entry it finishes, handed out
  // once by take_finished(), while they still hold what finished them.
  void record_finished() { recording_ = true; }
  std::vector<int32_t> take_finished();
  std::span<const int32_t> tokens(int32_t entry) const { return entries_.at(size_t(entry)).tokens; }
  // An entry's records ([n_recurrent_layers] x (conv, matrix) floats) as
  // bytes, to read or to fill (a pending one whose state came from the tier).
  std::span<const uint8_t> bytes_of(int32_t entry) const;
  void fill(int32_t entry, std::span<const uint8_t> bytes);

 private:
  struct Entry {
    std::vector<int32_t> tokens;
    bool pending = false, used = false;
    uint64_t last_use = 0;
  };
  float* record(int layer, int32_t entry);

  RecurrentLayers layers_;  // which layers hold a state, and its shape
  std::vector<float> data_;
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
  bool recording_ = false;
  std::vector<int32_t> finished_;  // since the last take_finished()
};

}  // namespace kvforge
