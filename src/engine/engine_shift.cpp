// Context shift (EngineOptions::context_shift): a running sequence whose
// next token has no position left in its context keeps its first n_keep
// tokens (rounded up to whole blocks), drops the older half of the blocks
// after them, and moves the rest down in place, K re-rotated to its new
// position (kv_shift.h), V as it is. Paged: BlockManager::shift releases the
// dropped blocks and PagedKvCache::rerotate_k turns the moved K rows; static
// slots: the slot is compacted (static_slot_shift.cpp), in units of
// EngineOptions::block_size so that both modes drop the same tokens. No kept
// token is recomputed; the pool holds the same blocks or slots throughout.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/engine_impl.h"
#include "engine/kv/kv_layer_groups.h"

namespace kvforge {

std::string context_shift_refusal(const Model& model, const EngineOptions& o) {
  if (!o.context_shift) return {};
  if (model.tp() > 1) return "tensor-parallel runs";
  if (!o.kv_disk_dir.empty()) return "the KV disk tier (--kv-disk)";
  // A recurrent state has folded in every token: it cannot drop the oldest.
  if (model.config().hybrid()) return "hybrid models (a recurrent state cannot drop tokens)";
  const KvLayerGroups groups = KvLayerGroups::of(model.config());
  if (groups.groups.size() != 1 || groups.groups[0].window != 0 ||
      groups.slots != model.config().n_layer)
    return "models with sliding-window or shared-KV layers";
  if (o.n_keep < 0) return "a negative n_keep";
  return {};
}

void check_context_shift(const Model& model, const EngineOptions& o, int32_t max_len,
                         int32_t block_size) {
  const std::string refusal = context_shift_refusal(model, o);
  if (!refusal.empty())
    throw std::invalid_argument("--context-shift is not supported with " + refusal + " yet");
  if (o.context_shift && max_len < 4 * block_size)
    throw std::invalid_argument("--context-shift needs a context of at least 4 KV blocks (" +
                                std::to_string(4 * block_size) + " tokens), got " +
                                std::to_string(max_len));
}

void Engine::Impl::shift_full_sequences() {
  for (const std::unique_ptr<Sequence>& s : scheduler.running())
    if (s->shifts && !s->loading && s->n_pending() > 0 && s->n_computed + s->n_pending() > max_len)
      shift(*s);
}

void Engine::Impl::shift(Sequence& seq) {
  const int32_t bs = paged ? paged->blocks.block_size() : options.block_size;
  const int32_t held = (seq.n_computed + bs - 1) / bs;
  const int32_t keep = std::min((seq.n_keep + bs - 1) / bs, held / 2);
  const int32_t drop = std::max(1, (held - keep) / 2);
  if (paged)
    shift_blocks(seq, keep, drop);
  else
    slot_kv->slots.shift(seq.id, keep * bs, drop * bs);
  seq.tokens.erase(seq.tokens.begin() + keep * bs, seq.tokens.begin() + (keep + drop) * bs);
  seq.n_computed -= drop * bs;
  seq.n_dropped += drop * bs;
  ++context_shifts;
}

void Engine::Impl::shift_blocks(const Sequence& seq, int32_t keep, int32_t drop) {
  BlockManager& blocks = paged->blocks;
  const int32_t bs = blocks.block_size();
  blocks.shift(seq.id, keep, drop);
  for (const BlockCopy& c : blocks.take_pending_copies()) paged->cache.copy_block(c.src, c.dst);
  const int32_t delta = -drop * bs;
  const int32_t n_after = seq.n_computed + delta;  // positions held after the shift
  const std::span<const BlockId> table = blocks.block_table(seq.id);
  for (int32_t i = keep; i < int32_t(table.size()); ++i) {
    const int32_t n = std::min(bs, n_after - i * bs);
    for (int layer = 0; layer < model.config().n_layer; ++layer)
      paged->cache.rerotate_k(layer, table[size_t(i)], 0, n, model.rope(layer), delta);
  }
}

}  // namespace kvforge
