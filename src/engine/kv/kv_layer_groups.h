// How the paged KV cache groups a model's layers by attention type, the way
// vLLM's hybrid allocator does: full-attention layers need every position,
// sliding-window layers only the last W, so each kind gets its own block
// tables and a windowed group's blocks go back to the pool as its window
// moves past them.
//
// One pool, one block size in bytes. A block id belongs to one group at a
// time and holds block_size positions of that group's layers. Every group
// has the same number of layers (`slots`, padded when a type's layer count
// is not a multiple of it), so blocks of all groups are interchangeable
// and one budget serves them all: no split to tune, and a model whose
// sequences are short (windows never bite) uses the pool exactly as a
// full-attention model would. slots = the smallest layer count among the
// attention types; each type's layers are cut, in layer order, into groups
// of `slots` layers (the last one possibly short, its spare slot unused):
//   no window (llama, qwen3):   1 full group of n_layer          (as before groups)
//   every layer windowed:       1 windowed group of n_layer      (Mistral-style)
//   gemma2-2b, 13 full/13 SWA:  1 full + 1 windowed, 13 slots    (no padding)
//   gemma3-4b,  5 full/29 SWA:  1 full + 6 windowed, 5 slots     (1 spare slot of 35)
// A hybrid model's recurrent layers (Qwen 3.5's Gated DeltaNet) keep a state
// per sequence instead (kv/recurrent_state_pool.h) and belong to no group:
//   qwen35, 3 linear : 1 full:  1 full group of n_layer / 4 layers
// Gemma 4's shared-KV layers read their source layer's slot (ModelConfig::
// kv_source) and belong to no group either.
// Layers of different K/V widths (Gemma 4's windowed heads of 256 beside
// full ones of 512: ModelConfig::layer_kv_dim) fill a block by width rather
// than by count: a group holds layers of at most `capacity` K/V values per
// position in total, capacity = the smallest type's total width (at least
// the widest layer), so each type's layers are cut, in layer order, into
// groups of equal width; with equal widths this is the count rule above:
//   gemma-4-e2b, 3 full (512) / 12 SWA (256):  1 full group of 3 layers,
//                                              2 windowed groups of 6
// `slots` is then the most layers any group holds.
// Full groups come first; group 0 is the prefix cache's primary group
// (block_manager.h).
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_config.h"

namespace kvforge {

struct KvLayerGroup {
  int32_t window = 0;       // 0 = full attention; else the layers' sliding window W
  std::vector<int> layers;  // [≤ slots] model layers, ascending; layer i uses slot i
};

struct KvLayerGroups {
  // The window of a layer without K/V of its own (recurrent or shared):
  // in no group, its group_of_layer and slot_of_layer -1.
  static constexpr int32_t kNoKv = -1;

  std::vector<KvLayerGroup> groups;  // full groups first
  int slots = 0;                     // layers per block (the largest group)
  int64_t capacity = 0;              // K/V values per position a group may hold (see above)
  std::vector<int> group_of_layer;   // [n_layer]
  std::vector<int> slot_of_layer;    // [n_layer]

  // The windows of the groups, in group order (what BlockManager needs).
  std::vector<int32_t> windows() const;
  bool any_window() const;

  static KvLayerGroups of(const ModelConfig& config);
  // From per-layer windows directly ([n_layer], 0 = full attention, kNoKv =
  // none) and widths ([n_layer] K/V values per position; empty: all equal).
  static KvLayerGroups of_windows(const std::vector<int32_t>& layer_windows,
                                  const std::vector<int64_t>& layer_widths = {});
};

}  // namespace kvforge
