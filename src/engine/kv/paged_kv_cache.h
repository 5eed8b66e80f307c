// The block pool: K and V storage for every layer, allocated once, read and
// written through the block tables a BlockManager keeps. Storage only: it
// never decides which blocks a sequence gets. The storage is reserved at
// construction in 2 MiB huge pages that the kernel faults in (zeroed) as
// blocks are first written (core/huge_page_buffer.h): a pool sized for the
// worst case costs resident memory as far as it is used, and building it
// touches no page (zero-filling it up front would write, and keep resident,
// all of it: docs/bench/design-measurements.md).
//
// Layout, K and V alike (each in its own format, core/formats/kv_format.h):
//   [n_blocks][block] where a block holds its group's layers one after the
//   other, each layer's run [its n_kv_head][block_size] head records, record
//   bytes fastest; a layer's records are its own head size and count
//   (ModelConfig::layer_head_dim, layer_n_kv_head), so a block is as large
//   as its widest group.
// A block belongs to one layer group at a time (kv_layer_groups.h) and holds
// that group's layers: layer l lives in slot slot_of_layer[l] of the blocks
// in its group's block tables. Without sliding windows there is one group,
// slots = n_layer and slot = layer.
// Position varies fastest inside a run, so one kv head's keys (and values)
// of a block are one contiguous run of block_size records: the attention
// kernel, which walks one kv head's positions in order, streams memory
// sequentially within a block and jumps only at block edges. One block of
// one layer is itself one contiguous run, so a per-block KvSpan is a plain
// strided view (pos stride = one record, head stride = block_size records)
// and a copy-on-write copies one run per block. Writing a token touches
// n_kv_head records block_size records apart, which costs nothing next to
// the reads (every step re-reads all earlier positions).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/huge_page_buffer.h"
#include "core/ops/rope.h"
#include "engine/kv/block_manager.h"
#include "engine/kv/hybrid_kv_manager.h"
#include "engine/kv/kv_layer_groups.h"
#include "engine/kv/kv_layer_runs.h"
#include "model/kv_store.h"
#include "model/model_config.h"

namespace kvforge {

class PagedKvCache final : public KvStore {
 public:
  // Storage for n_blocks blocks of block_size positions in every layer. The
  // manager's block tables map (seq, pos) to (block, offset); it must outlive
  // the cache and agree on n_blocks, block_size and the layer groups' windows
  // (KvLayerGroups::of(config).windows()).
  PagedKvCache(const ModelConfig& config, const BlockManager& blocks, KvFormat format);

  // K+V bytes of one block in all slots, for sizing a pool from a budget.
  static size_t block_bytes(const ModelConfig& config, int32_t block_size, KvFormat format);

  KvFormat format() const override;
  size_t bytes() const;

  void write(int layer, int32_t seq, int32_t pos, const float* k, const float* v) override;
  // One span per block, in table order (the first one from `first` on).
  void spans(int layer, int32_t seq, int32_t first, int32_t n,
             std::vector<KvSpan>& out) const override;

  // Context shift (kv_shift.h): re-rotates K of positions [first, first + n)
  // of `block` in `layer` by `delta` positions, in place; V is untouched.
  // Refuses a block shared with another owner (refcount != 1), as write() does.
  // Defined in paged_kv_shift.cpp.
  void rerotate_k(int layer, BlockId block, int32_t first, int32_t n, const RopeTable& rope,
                  int32_t delta);
  // Hybrid models: the linear-attention layers' states come from `states`
  // (which must outlive the cache); without, recurrent_state() throws.
  void attach_states(HybridKvManager* states) { states_ = states; }
  RecurrentState recurrent_state(int layer, int32_t seq) override {
    return states_ ? states_->state(layer, seq) : KvStore::recurrent_state(layer, seq);
  }

  // Copies every slot's K/V of `src` into `dst` (copy-on-write).
  void copy_block(BlockId src, BlockId dst);

  // One block's K/V in every slot as one byte string, for the disk tier:
  // with equal head sizes [slots] x (K run, then V run), each the pool's own
  // run ([n_kv_head][block_size] records); with per-layer head sizes the
  // block's K bytes, then its V bytes. out/in hold block_bytes() bytes.
  size_t block_bytes() const { return k_block_bytes_ + v_block_bytes_; }
  void export_block(BlockId block, std::span<uint8_t> out) const;
  void import_block(BlockId block, std::span<const uint8_t> in);

  // write() and spans() check (seq, pos) against the manager: the sequence
  // must exist, pos < seq_tokens(seq) (positions are reserved by
  // allocate/append first) and n ≤ seq_tokens(seq). write() also refuses a
  // block whose refcount is not 1: writing into a block another sequence
  // shares would corrupt it (a missed copy-on-write).

 private:
  // The runs of every layer for `groups` and the K / V bytes of one block.
  static std::vector<KvLayerRun> layer_runs(const ModelConfig& config, const KvLayerGroups& groups,
                                            int32_t block_size, KvFormat format, size_t& k_block,
                                            size_t& v_block);
  // Byte address of (layer, block, kv head 0, position 0) in k_ / v_.
  uint8_t* k_run(int layer, BlockId block) const;
  uint8_t* v_run(int layer, BlockId block) const;
  void check_layer(int layer, const char* what) const;
  void check_block(BlockId block, const char* what) const;
  // The block of `layer` holding `pos` of `seq`; throws if a window released it.
  BlockId block_of(int layer, int32_t seq, int32_t pos, const char* what) const;

  const BlockManager& blocks_;
  HybridKvManager* states_ = nullptr;
  KvLayerGroups groups_;
  int n_layer_;
  int32_t n_blocks_;
  int32_t block_size_;
  KvFormat format_;
  std::vector<KvLayerRun> layers_;        // [n_layer] (unused for layers without K/V)
  size_t k_block_bytes_, v_block_bytes_;  // one block, every slot
  int export_chunks_;                     // equal layer shapes: slots; else 1 (export_block)
  HugePageBuffer k_;                      // [n_blocks][k_block_bytes_]
  HugePageBuffer v_;                      // [n_blocks][v_block_bytes_]
};

}  // namespace kvforge
