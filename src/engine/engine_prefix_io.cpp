// Engine::export_prefix / import_prefix (kvforge/engine.h): whole prefix
// blocks of the paged pool, or of a free static slot, as disk-tier block
// files and back. The static slots' blocks are runs of a slot
// (static_slot_io.cpp); the paged pool's go
// through the block manager's usual question-then-action calls under a
// sequence id of their own, held only for the call: export admits it over
// the cached blocks to read them, import admits it, fills the blocks it was
// given, registers them as computed and frees it, leaving them cached.
// Neither counts as a prefix-cache hit or miss: no prompt was admitted.
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/engine_impl.h"
#include "engine/kv/kv_block_file.h"
#include "engine/static_pipeline/static_slot_io.h"
#include "model/model_fingerprint.h"

namespace kvforge {
namespace {

// Why prefix blocks cannot move in or out of this engine; "" when they can.
// (Templates over Engine::Impl, a private type these member functions hand in.)
template <typename EngineImpl>
std::string prefix_io_refusal(const EngineImpl& m) {
  const EngineOptions& o = m.options;
  if (m.model.tp() > 1 || o.comm) return "not supported under tensor parallelism";
  if (m.model.config().hybrid()) return "not supported for models with recurrent layers";
  const bool windowed = m.paged ? m.paged->blocks.group_windows() != std::vector<int32_t>{0}
                                : m.slot_kv->runner.cache().ring_positions() > 0;
  if (windowed) return "not supported for models with sliding-window layers";
  if (!m.paged && m.model.config().n_kv_shared > 0)
    return "not supported for the static slots of models with shared-KV layers";
  if (m.paged && !o.enable_prefix_cache) return "the prefix cache is off";
  if (!m.paged && !o.reuse_slots)
    return "the static slots keep no K/V once a request ends (slot reuse is off)";
  return "";
}

template <typename EngineImpl>
void check_prefix_io(const EngineImpl& m) {
  if (const std::string why = prefix_io_refusal(m); !why.empty())
    throw std::invalid_argument("KV prefix blocks: " + why);
}

// Static slots: runs of o.block_size positions, in the layout the slots'
// disk tier shares with the paged pool.
template <typename EngineImpl>
KvBlockIdentity identity_of(const EngineImpl& m) {
  if (!m.paged) {
    StaticRunner& r = m.slot_kv->runner;  // (cache() is not const)
    return {model_fingerprint(m.model), r.config().kv_format, m.options.block_size,
            r.cache().run_bytes(m.options.block_size)};
  }
  return {model_fingerprint(m.model), m.options.kv_format, m.paged->blocks.block_size(),
          m.paged->cache.block_bytes()};
}

uint64_t file_fingerprint(const std::vector<uint8_t>& file) {
  uint64_t f = 0;
  if (file.size() >= 24) std::memcpy(&f, file.data() + 16, sizeof f);
  return f;
}

std::string refusal(BlockFileCheck c, size_t b, const std::vector<uint8_t>& file, uint64_t ours) {
  std::string why = std::string("block ") + std::to_string(b) + ": " + block_file_check_name(c);
  if (c == BlockFileCheck::kOtherIdentity) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  " (written for another model, KV format or block size: fingerprint %016llx, "
                  "this engine's %016llx)",
                  static_cast<unsigned long long>(file_fingerprint(file)),
                  static_cast<unsigned long long>(ours));
    why += buf;
  }
  return why;
}

// tokens plus one more id: the block manager always leaves a prompt's last
// token to compute, so the sentinel lets every whole block of `tokens` count.
std::vector<int32_t> with_sentinel(std::span<const int32_t> tokens) {
  std::vector<int32_t> out(tokens.begin(), tokens.end());
  out.push_back(0);
  return out;
}

// Each file checked against `id`, the chained hash and the token ids of
// tokens[0, (b + 1) * block_size): the payloads, or std::invalid_argument
// naming the first bad file and why.
std::vector<std::span<const uint8_t>> checked_payloads(
    const KvBlockIdentity& id, std::span<const int32_t> tokens,
    std::span<const std::vector<uint8_t>> files) {
  const size_t bs = size_t(id.block_size);
  if (files.size() * bs > tokens.size())
    throw std::invalid_argument("KV prefix blocks: " + std::to_string(files.size()) +
                                " blocks need " + std::to_string(files.size() * bs) +
                                " token ids, got " + std::to_string(tokens.size()));
  std::vector<std::span<const uint8_t>> payloads(files.size());
  uint64_t hash = PrefixCache::kRootHash;
  for (size_t b = 0; b < files.size(); ++b) {
    hash = PrefixCache::chain_hash(hash, tokens.subspan(b * bs, bs));
    const BlockFileCheck c =
        decode_block_file(files[b], id, hash, tokens.first((b + 1) * bs), payloads[b]);
    if (c != BlockFileCheck::kOk)
      throw std::invalid_argument("KV prefix blocks: " + refusal(c, b, files[b], id.fingerprint()));
  }
  return payloads;
}

}  // namespace

std::vector<std::vector<uint8_t>> Engine::export_prefix(std::span<const int32_t> tokens) {
  Impl& m = *impl_;
  check_prefix_io(m);
  if (!m.paged)
    return export_slot_blocks(m.slot_kv->slots, m.slot_kv->runner, identity_of(m), tokens);
  BlockManager& blocks = m.paged->blocks;
  const int32_t bs = blocks.block_size();
  const std::vector<int32_t> probe = with_sentinel(tokens);
  const int32_t n = blocks.cached_prefix(probe);
  std::vector<std::vector<uint8_t>> out;
  if (n == 0 || !blocks.can_allocate(probe, n)) return out;
  const SeqId seq = m.next_seq++;
  blocks.allocate(seq, probe, n, INT32_MAX, false);  // all cached: no block is taken
  const std::span<const BlockId> table = blocks.block_table(seq);
  const KvBlockIdentity id = identity_of(m);
  std::vector<uint8_t> payload(m.paged->cache.block_bytes());
  uint64_t hash = PrefixCache::kRootHash;
  for (int32_t b = 0; b < n / bs; ++b) {
    m.paged->cache.export_block(table[size_t(b)], payload);
    hash = PrefixCache::chain_hash(hash, tokens.subspan(size_t(b) * bs, size_t(bs)));
    out.push_back(encode_block_file(id, hash, tokens.first(size_t(b + 1) * bs), payload));
  }
  blocks.free(seq);
  return out;
}

int32_t Engine::import_prefix(std::span<const int32_t> tokens,
                              std::span<const std::vector<uint8_t>> files) {
  Impl& m = *impl_;
  check_prefix_io(m);
  const KvBlockIdentity id = identity_of(m);
  const std::vector<std::span<const uint8_t>> payloads = checked_payloads(id, tokens, files);
  if (!m.paged)
    return import_slot_blocks(m.slot_kv->slots, m.slot_kv->runner, id, tokens, payloads);
  BlockManager& blocks = m.paged->blocks;
  const int32_t bs = blocks.block_size();
  const int32_t n = int32_t(files.size()) * bs;
  const std::vector<int32_t> probe = with_sentinel(tokens.first(size_t(n)));
  if (n == 0) return 0;
  if (!blocks.can_allocate(probe, n))
    throw std::invalid_argument("KV prefix blocks: the KV pool has no room for " +
                                std::to_string(files.size()) + " blocks now");
  const SeqId seq = m.next_seq++;
  const int32_t reused = blocks.allocate(seq, probe, n, INT32_MAX, false);
  const std::span<const BlockId> table = blocks.block_table(seq);
  for (int32_t b = reused / bs; b < n / bs; ++b)
    m.paged->cache.import_block(table[size_t(b)], payloads[size_t(b)]);
  blocks.mark_computed(seq, probe, n);
  if (m.tier) {
    const ComputedRun run{seq, probe, reused, n, n};
    m.tier->store_computed({&run, 1});
  }
  blocks.free(seq);
  return n;
}

int32_t Engine::forget_prefix(std::span<const int32_t> tokens) {
  Impl& m = *impl_;
  return m.paged ? m.paged->blocks.forget_prefix(tokens) : m.slot_kv->slots.forget(tokens);
}

uint64_t Engine::block_fingerprint() const {
  const Impl& m = *impl_;
  if (!prefix_io_refusal(m).empty()) return 0;
  return identity_of(m).fingerprint();
}

}  // namespace kvforge
