// The KV disk tier (engine/kv/kv_disk_tier.h) for the static pipeline's
// slots. Files use the paged pool's block layout and hash chain, so the
// paged and static engines of one model, KV format and block size share them.
//
// Read side: the one both modes share (kv/disk_tier_reader.h). A slot whose
// prompt blocks past what it keeps are on disk waits in the loading state
// while a PrefixLoader thread reads them into a staging buffer; when the
// load lands, on the engine thread, the slot is cut back to the first
// restored position and the blocks are copied in. They cannot go straight
// into the slot: every generate plan spans the whole static cache, idle
// slots included, so the loader thread would write beside a running plan.
//
// Write side: a prompt's full blocks are written through once the slot
// holds them (store_computed, kv/prefix_tier.h).
//
// Models without sliding-window layers only (a ring slot keeps only its
// window): the Engine checks, in both modes.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "engine/kv/disk_tier_reader.h"
#include "engine/static_pipeline/static_runner.h"
#include "engine/static_pipeline/static_slot_manager.h"

namespace kvforge {

class StaticPrefixTier final : public DiskTierReader {
 public:
  // `slots` tells which slot holds a sequence and cuts it back at a landing.
  StaticPrefixTier(KvDiskTier& disk, StaticRunner& runner, StaticSlotManager& slots);
  // Stops the loads in flight before their staging buffers go.
  ~StaticPrefixTier() override;

  // For each run that computed prompt tokens (a slot's fill; decodes write
  // nothing), the full blocks of its computed prompt positions
  // [0, min(n_prompt, n_computed)) that the tier lacks.
  void store_computed(std::span<const ComputedRun> runs) override;

 private:
  // A staging buffer of n blocks for seq.
  std::function<void(size_t, std::span<const uint8_t>)> destination(SeqId seq, int32_t from_block,
                                                                    int32_t n) override;
  // Cuts seq's slot to from_block blocks and appends the good staged ones.
  void landed(SeqId seq, int32_t from_block, int32_t good) override;
  void dropped(SeqId seq) override { staged_.erase(seq); }
  // Writes the full blocks of `tokens` (all in the slot) the tier lacks.
  void store(int32_t slot, std::span<const int32_t> tokens);

  StaticRunner& runner_;
  StaticSlotManager& slots_;
  size_t block_bytes_;
  std::map<SeqId, std::vector<uint8_t>> staged_;  // per loading seq: [n blocks][block_bytes_]
  std::vector<uint8_t> out_;                      // [block_bytes_]
};

}  // namespace kvforge
