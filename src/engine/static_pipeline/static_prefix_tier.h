// The KV disk tier (engine/kv/kv_disk_tier.h) for the static pipeline's
// slots: admitting a request restores the longest prefix of whole blocks
// the tier holds into its slot instead of recomputing it, and a prompt's
// full blocks are written through once the slot holds them (the write side,
// store_computed, kv/prefix_tier.h). Files use the
// paged pool's block layout and hash chain, so the paged and static engines
// of one model, KV format and block size share them.
//
// Restores stay synchronous here, unlike the paged engine's (prefix_loader.h):
// a static step admits a request and prefills its slot in one go
// (the Engine's static mode, engine_static.cpp) with plans fixed at compile time over the
// whole static cache, and a slot that another thread fills while a generate
// plan runs would need a loading state the zero-replanning step loop does
// not have. Each admission already stalls the other slots for its prefill
// chunks; the read adds to that stall, it does not create one.
//
// Models without sliding-window layers only (a ring slot keeps only its
// window): the Engine checks, in both modes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/kv/kv_disk_tier.h"
#include "engine/kv/prefix_tier.h"
#include "engine/static_pipeline/static_runner.h"
#include "engine/static_pipeline/static_slot_manager.h"

namespace kvforge {

class StaticPrefixTier final : public PrefixTierWriter {
 public:
  // `slots` tells which slot holds a sequence.
  StaticPrefixTier(KvDiskTier& disk, StaticRunner& runner, const StaticSlotManager& slots);

  // Tokens of `prompt` the tier restores into a slot: whole blocks, fewer
  // than prompt.size() (the last token is computed). Reads and verifies
  // them (so install cannot fail), unless the tier's index says it holds no
  // more than `beyond` tokens: then 0, without I/O.
  int32_t fetch(std::span<const int32_t> prompt, int32_t beyond);
  // Empties `slot` and fills it with the fetched tokens' K/V.
  void install(int32_t slot);
  // For each run that computed prompt tokens (a slot's fill; decodes write
  // nothing), the full blocks of its computed prompt positions
  // [0, min(n_prompt, n_computed)) that the tier lacks.
  void store_computed(std::span<const ComputedRun> runs) override;

 private:
  // Writes the full blocks of `tokens` (all in the slot) the tier lacks.
  void store(int32_t slot, std::span<const int32_t> tokens);

  KvDiskTier& disk_;
  StaticRunner& runner_;
  const StaticSlotManager& slots_;
  int32_t block_size_;
  size_t block_bytes_;
  std::vector<uint8_t> staged_;  // [fetched blocks][block_bytes_]
  int32_t n_staged_ = 0;
  std::vector<uint8_t> out_;  // [block_bytes_]
};

}  // namespace kvforge
