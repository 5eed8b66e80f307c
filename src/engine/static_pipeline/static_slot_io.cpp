#include "engine/static_pipeline/static_slot_io.h"

#include <stdexcept>
#include <string>

#include "engine/kv/prefix_cache.h"

namespace kvforge {

std::vector<std::vector<uint8_t>> export_slot_blocks(const StaticSlotManager& slots,
                                                     StaticRunner& runner,
                                                     const KvBlockIdentity& id,
                                                     std::span<const int32_t> tokens) {
  int32_t common = 0;
  const int32_t slot = slots.free_slot_holding(tokens, &common);
  const int32_t bs = id.block_size;
  std::vector<std::vector<uint8_t>> out;
  if (slot < 0) return out;
  std::vector<uint8_t> payload(id.payload_bytes);
  uint64_t hash = PrefixCache::kRootHash;
  for (int32_t b = 0; b < common / bs; ++b) {
    runner.cache().export_run(slot, b * bs, bs, payload);
    hash = PrefixCache::chain_hash(hash, tokens.subspan(size_t(b) * bs, size_t(bs)));
    out.push_back(encode_block_file(id, hash, tokens.first(size_t(b + 1) * bs), payload));
  }
  return out;
}

int32_t import_slot_blocks(StaticSlotManager& slots, StaticRunner& runner,
                           const KvBlockIdentity& id, std::span<const int32_t> tokens,
                           std::span<const std::span<const uint8_t>> payloads) {
  const auto n = int32_t(payloads.size()) * id.block_size;
  if (n == 0) return 0;
  if (n > runner.capacity())
    throw std::invalid_argument("KV prefix blocks: " + std::to_string(n) +
                                " tokens do not fit a static slot of " +
                                std::to_string(runner.capacity()));
  const int32_t slot = slots.empty_free_slot();
  if (slot < 0)
    throw std::invalid_argument("KV prefix blocks: every static slot is running a request now");
  for (const std::span<const uint8_t> payload : payloads)
    runner.import_run(slot, id.block_size, payload);
  slots.held(slot, tokens.first(size_t(n)));
  return n;
}

}  // namespace kvforge
