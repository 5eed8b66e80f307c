// Inside the Engine (kvforge/engine.h): what both KV modes share (the
// scheduler over a KvManager, the request table, sampling, forks, the
// lockstep leader, the counters) and each mode's KV and step executor:
//   PagedKv:  BlockManager + PagedKvCache + ModelRunner (engine_paged.cpp);
//   SlotKv:   StaticSlotManager + StaticRunner and its plans (engine_static.cpp).
// A step is: schedule, run, post-process (record what was computed with the
// KV manager, hand new full blocks to the disk tier), sample.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/kv/disk_prefix_tier.h"
#include "engine/kv/kv_disk_tier.h"
#include "engine/kv/paged_kv_cache.h"
#include "engine/lockstep/lockstep_leader.h"
#include "engine/model_runner.h"
#include "engine/request_table.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "engine/static_pipeline/static_prefix_tier.h"
#include "engine/static_pipeline/static_runner.h"
#include "engine/static_pipeline/static_slot_manager.h"
#include "kvforge/engine.h"

namespace kvforge {

// The KV disk tier under `o.kv_disk_dir` for blocks of `block_size` tokens
// and `block_bytes` bytes, or null: without a directory, or (with a warning)
// when `refusal` says why this engine cannot use one.
std::unique_ptr<KvDiskTier> open_disk_tier(const Model& model, const EngineOptions& o,
                                           KvFormat format, int32_t block_size, size_t block_bytes,
                                           const std::string& refusal);

// Why this engine cannot shift contexts ("" when it can, or when
// o.context_shift is off), and the check that throws it (engine_shift.cpp).
std::string context_shift_refusal(const Model& model, const EngineOptions& o);
void check_context_shift(const Model& model, const EngineOptions& o, int32_t max_len,
                         int32_t block_size);

struct PagedKv {
  PagedKv(const Model& model, ThreadPool& pool, const EngineOptions& o);
  // The KV manager the scheduler works with: the block manager, or for a
  // hybrid model the hybrid manager over it and the state pool.
  KvManager& manager() { return hybrid ? static_cast<KvManager&>(*hybrid) : blocks; }
  int32_t n_state_slots;  // hybrid models: kv/kv_pool_split.h; 0 otherwise
  BlockManager blocks;
  std::unique_ptr<RecurrentStatePool> states;  // hybrid models: n_state_slots slots
  std::unique_ptr<HybridKvManager> hybrid;     // hybrid models
  PagedKvCache cache;
  ModelRunner runner;
  std::unique_ptr<KvDiskTier> disk;  // null without --kv-disk
  std::unique_ptr<DiskPrefixTier> tier;
};

struct SlotKv {
  SlotKv(const Model& model, ThreadPool& pool, PlanSet plans, const EngineOptions& o);
  StaticRunner runner;
  StaticSlotManager slots;
  std::unique_ptr<KvDiskTier> disk;  // null without --kv-disk
  std::unique_ptr<StaticPrefixTier> tier;
  size_t kv_bytes;                   // the static cache, all slots
  std::vector<int32_t> step_tokens;  // [B] decode input, reused every step
  std::vector<Sequence*> step_seqs;  // [B] who each decode row belongs to
};

struct Engine::Impl {
  Impl(const Model& m, EngineOptions o, std::unique_ptr<PagedKv> p);
  Impl(const Model& m, EngineOptions o, std::unique_ptr<SlotKv> s);

  const Model& model;
  EngineOptions options;
  std::unique_ptr<PagedKv> paged;  // exactly one of the two modes
  std::unique_ptr<SlotKv> slot_kv;
  KvManager& kv;
  Scheduler scheduler;
  int32_t n_ctx;
  int32_t max_len;
  RequestTable requests;
  SeqId next_seq = 0;
  int64_t steps = 0, tokens_computed = 0, tokens_reused = 0, context_shifts = 0;
  int32_t blocks_used_peak = 0;
  double step_seconds = 0;                 // whole step() calls that ran a forward pass
  PrefixTierWriter* tier = nullptr;        // the disk tier's write side, either mode; null: none
  std::vector<ComputedRun> computed;       // record_computed's, reused every step
  std::unique_ptr<LockstepLeader> leader;  // last: it goes first, telling the others

  void check_request(std::span<const int32_t> prompt, const SamplingParams& params, int n,
                     LogprobOptions lp) const;
  std::unique_ptr<Sequence> make_sequence(RequestId id, int branch);
  // A new branch b of `root`'s request with root's tokens, running behind it.
  Sequence& add_branch(const Sequence& root, int branch);
  void sample(Sequence& seq, std::span<const float> logits, std::vector<StepEvent>& events,
              std::vector<Sequence*>& finished);
  void remove(Sequence* seq);
  // Post-processing of what a pass computed: each chunk's n_computed, the
  // KV manager's record of it, the new full blocks written through to the tier.
  void record_computed(std::span<const ScheduledChunk> chunks);

  // engine_shift.cpp: the context shift of every running sequence that is
  // out of positions, before the step is scheduled.
  void shift_full_sequences();
  void shift(Sequence& seq);
  void shift_blocks(const Sequence& seq, int32_t keep, int32_t drop);

  // engine_paged.cpp
  void check_paged_request(std::span<const int32_t> prompt, const SamplingParams& params,
                           int n) const;
  void step_paged(std::vector<StepEvent>& events);
  bool argmax_only(const SchedulerOutput& plan) const;
  void paged_stats(EngineStats& s) const;

  // engine_static.cpp
  void check_static_request(std::span<const int32_t> prompt, const SamplingParams& params,
                            int n) const;
  void step_static(std::vector<StepEvent>& events);
  void decode_slots(const SchedulerOutput& plan, std::vector<StepEvent>& events);
  void admit_to_slots(const ScheduledChunk& admitted, std::vector<StepEvent>& events);
  // Computes seq's prompt past its n_computed into its slot (which holds
  // those positions: kept, or `restored` from the tier) and samples.
  void fill_slot(Sequence& seq, bool restored, std::vector<StepEvent>& events);
  void static_stats(EngineStats& s) const;
};

}  // namespace kvforge
