// The block pool: K and V storage for every layer, allocated once, read and
// written through the block tables a BlockManager keeps. Storage only: it
// never decides which blocks a sequence gets.
//
// Layout: see the comment on the storage members (the implementer documents
// which index varies fastest and why it suits the attention kernel).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/kv/block_manager.h"
#include "model/kv_store.h"
#include "model/model_config.h"

namespace kvforge {

class PagedKvCache final : public KvStore {
 public:
  // Storage for n_blocks blocks of block_size positions in every layer. The
  // manager's block tables map (seq, pos) to (block, offset); it must outlive
  // the cache and agree on n_blocks and block_size.
  PagedKvCache(const ModelConfig& config, const BlockManager& blocks, KvFormat format);

  // K+V bytes of one block in all layers, for sizing a pool from a budget.
  static size_t block_bytes(const ModelConfig& config, int32_t block_size, KvFormat format);

  KvFormat format() const override;
  size_t bytes() const;

  void write(int layer, int32_t seq, int32_t pos, const float* k, const float* v) override;
  // One span per block, in table order.
  void spans(int layer, int32_t seq, int32_t n, std::vector<KvSpan>& out) const override;

  // Copies every layer's K/V of `src` into `dst` (copy-on-write).
  void copy_block(BlockId src, BlockId dst);

 private:
  // (implementation-defined)
};

}  // namespace kvforge
