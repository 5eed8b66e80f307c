// llama-server's slot save and restore on the static slots (Engine::
// export_prefix / import_prefix when the engine runs static slots with
// EngineOptions::reuse_slots): whole blocks of a free slot's K/V as disk-tier
// block files (engine/kv/kv_block_file.h) and back. A block is a run of
// `id.block_size` positions in the layout the slots' disk tier shares with the
// paged pool, so a file saved by either engine of one model, KV format and
// block size restores into the other.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/kv/kv_block_file.h"
#include "engine/static_pipeline/static_runner.h"
#include "engine/static_pipeline/static_slot_manager.h"

namespace kvforge {

// The leading whole blocks of `tokens` that the free slot sharing the longest
// prefix with them holds; none when no free slot holds a whole block of them.
std::vector<std::vector<uint8_t>> export_slot_blocks(const StaticSlotManager& slots,
                                                     StaticRunner& runner,
                                                     const KvBlockIdentity& id,
                                                     std::span<const int32_t> tokens);

// Empties a free slot and puts the checked `payloads` (block b holding
// tokens[b * block_size, (b + 1) * block_size)) in it, so that the next
// prompt starting with those tokens reuses them. Returns the tokens
// restored; std::invalid_argument when every slot is busy.
int32_t import_slot_blocks(StaticSlotManager& slots, StaticRunner& runner,
                           const KvBlockIdentity& id, std::span<const int32_t> tokens,
                           std::span<const std::span<const uint8_t>> payloads);

}  // namespace kvforge
