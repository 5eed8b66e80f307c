// Runs sequences through a compiled PlanSet on a static KV cache: the
// NPU-style counterpart of SequenceRunner.
//
//   prefill(slot, prompt)   the prefill plan, chunk by chunk (the last chunk
//                           padded), K/V written straight into the slot's
//                           cache rows: nothing is copied at the hand-off to
//                           decoding;
//   decode(tokens)          one generate plan for all slots at once (idle
//                           slots are padding rows), the smallest variant
//                           whose KV length holds the longest active slot
//                           after the step, moving up as sequences cross
//                           variant boundaries.
//
// Everything (cache, arena, matmul scratch, per-row inputs, executors) is
// allocated at construction: after it, prefill and decode allocate nothing
// and never compile a plan.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/kernels/matmul.h"
#include "core/threadpool.h"
#include "engine/static_pipeline/plan.h"
#include "engine/static_pipeline/plan_executor.h"
#include "engine/static_pipeline/static_kv_cache.h"
#include "model/model.h"

namespace kvforge {

// Decode input for a slot that does not take part in the step.
inline constexpr int32_t kIdleSlot = -1;

// `prompt` if it fits max_prompt_len; else the last max_prompt_len tokens
// under TruncateLeft, or std::length_error naming both lengths and the flag.
std::span<const int32_t> fit_prompt(std::span<const int32_t> prompt, const StaticConfig& config,
                                    OverflowPolicy policy);

class StaticRunner {
 public:
  // `plans` must have passed validate_plan_set for `model` (compile_plans and
  // load_plan_file guarantee it); `pool` must have plans.n_threads threads.
  // `comm`: the channel between the ranks the model was loaded for (it must
  // outlive the runner); nullptr: one process.
  StaticRunner(const Model& model, ThreadPool& pool, PlanSet plans, Communicator* comm = nullptr);
  StaticRunner(const StaticRunner&) = delete;
  StaticRunner& operator=(const StaticRunner&) = delete;

  const Model& model() const { return model_; }
  const PlanSet& plans() const { return plans_; }
  const StaticConfig& config() const { return plans_.config; }
  int32_t capacity() const { return plans_.config.capacity(); }
  int32_t slots() const { return plans_.config.slots; }
  int32_t length(int32_t slot) const { return lengths_.at(size_t(slot)); }
  StaticKvCache& cache() { return cache_; }

  // Fills an empty slot with `tokens` (1..max_prompt_len of them) and
  // returns the last token's logits [n_vocab], valid until the next call.
  // Throws std::length_error for a prompt over max_prompt_len, std::logic_error
  // for a slot that is not empty. With `from` > 0 the slot already holds
  // tokens[0, from) (restored: import_run) and the chunks start there.
  std::span<const float> prefill(int32_t slot, std::span<const int32_t> tokens, int32_t from = 0);

  // Appends n positions of K/V to the slot from `in` (StaticKvCache::import_run
  // layout): a prefix restored from the KV disk tier.
  void import_run(int32_t slot, int32_t n, std::span<const uint8_t> in);

  // One step: tokens[slot] is appended to each slot whose entry is not
  // kIdleSlot. Returns logits [slots][n_vocab] (rows of idle slots are
  // padding, meaningless). Throws std::length_error when an active slot is
  // full (length == capacity) and std::logic_error for an empty active slot.
  std::span<const float> decode(std::span<const int32_t> tokens);
  // decode() with only `slot` active; returns its logits [n_vocab].
  std::span<const float> decode_one(int32_t slot, int32_t token);
  // decode() through the generate plan of variant `variant_index` instead of
  // the smallest that fits (benchmarks compare variants at one length);
  // throws std::out_of_range when that variant is too short.
  std::span<const float> decode_with_variant(std::span<const int32_t> tokens, size_t variant_index);

  // Forgets positions [length, ...) of the slot (0 frees it). Throws
  // std::logic_error when the next position's sliding window reaches
  // positions the ring no longer holds (see window_intact), or when a hybrid
  // model's recurrent states would have to be cut back (see state_intact).
  void truncate(int32_t slot, int32_t length);
  // Whether the slot, cut to `length` (≤ its length), still holds what the
  // sliding window of position `length` reads: always without windows; with
  // them, a ring of `window` positions only holds the last ones written.
  bool window_intact(int32_t slot, int32_t length) const;
  // Whether the slot, cut to `length`, still has the recurrent states of its
  // first `length` positions: always without linear-attention layers; with
  // them only for 0 (a restart) or its whole length, since a state has folded
  // in every position and cannot be cut back.
  bool state_intact(int32_t slot, int32_t length) const;
  void release(int32_t slot) { truncate(slot, 0); }
  // Context shift: drops positions [first, first + drop) of the slot and moves
  // the later ones down in place (StaticKvCache::shift), nothing recomputed.
  void shift(int32_t slot, int32_t first, int32_t drop);

  // Index into config().generate_variants of the smallest variant holding `kv_needed`.
  size_t variant_for(int32_t kv_needed) const;
  // Generate steps run per variant so far ([variants]).
  const std::vector<uint64_t>& steps_per_variant() const { return steps_per_variant_; }
  // KV length of the generate plan the last decode ran (0 before any).
  int32_t last_variant() const { return last_variant_; }

 private:
  std::span<const float> run_generate(std::span<const int32_t> tokens, size_t variant_index);
  void check_slot(int32_t slot) const;
  void reserve_column_parts(const Model& model, size_t rows);

  const Model& model_;
  ThreadPool& pool_;
  Communicator& comm_;
  PlanSet plans_;
  StaticKvCache cache_;
  std::unique_ptr<PlanExecutor> prefill_exec_;
  std::vector<std::unique_ptr<PlanExecutor>> generate_exec_;  // [variants]
  std::unique_ptr<uint8_t[]> arena_storage_;                  // largest arena + alignment slack
  uint8_t* arena_ = nullptr;  // 64-byte aligned, shared by all plans
  MatmulScratch matmul_scratch_;
  std::vector<int32_t> lengths_;     // [slots] filled positions
  std::vector<int32_t> row_tokens_;  // [max rows] plan inputs, reused every step
  std::vector<int32_t> row_positions_;
  std::vector<int32_t> row_slots_;
  std::vector<uint8_t> row_valid_;
  std::vector<int32_t> logit_rows_;         // [max rows]
  std::vector<float> prefill_logits_;       // [n_vocab] the last chunk's logits row
  std::vector<int32_t> decode_one_tokens_;  // [slots] decode_one's step input
  std::vector<uint64_t> steps_per_variant_;
  int32_t last_variant_ = 0;
};

}  // namespace kvforge
