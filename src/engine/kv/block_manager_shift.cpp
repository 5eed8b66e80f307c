// BlockManager::shift: the block tables' side of a context shift
// (block_manager.h).
#include <stdexcept>
#include <string>

#include "engine/kv/block_manager.h"

namespace kvforge {

void BlockManager::shift(SeqId seq, int32_t keep_blocks, int32_t drop_blocks) {
  Seq& s = seq_state(seq, "shift");
  if (n_groups() != 1)
    throw std::logic_error("BlockManager::shift: the model has sliding-window layers");
  GroupTable& t = s.groups[0];
  const auto held = int32_t(t.table.size());
  if (keep_blocks < 0 || drop_blocks < 1 || keep_blocks + drop_blocks >= held)
    throw std::invalid_argument("BlockManager::shift: seq " + std::to_string(seq) + " holds " +
                                std::to_string(held) + " blocks; keeping " +
                                std::to_string(keep_blocks) + " and dropping " +
                                std::to_string(drop_blocks) + " leaves none to move");
  for (int32_t i = keep_blocks; i < keep_blocks + drop_blocks; ++i) release(t.table[size_t(i)]);
  t.table.erase(t.table.begin() + keep_blocks, t.table.begin() + keep_blocks + drop_blocks);
  for (size_t i = size_t(keep_blocks); i < t.table.size(); ++i) {
    BlockId& b = t.table[i];
    if (prefix_ && prefix_->has_entry(b) && refcount_[size_t(b)] == 1) prefix_->erase(b);
    if (refcount_[size_t(b)] == 1) continue;
    if (n_free_blocks() == 0)
      throw std::runtime_error("context shift: no free KV block to copy a shared block into");
    const BlockId copy = take_free_block();
    pending_copies_.push_back({b, copy});
    release(b);
    b = copy;
  }
  if (t.chain.size() > size_t(keep_blocks)) t.chain.resize(size_t(keep_blocks));
  s.n_tokens -= drop_blocks * block_size_;
  s.registers = false;
}

}  // namespace kvforge
