// Requests served on the static pipeline's B batch slots: the NPU-style
// counterpart of the paged Engine behind GenerationBackend (what `kvforge
// run`, `chat` and `serve` run with --static/--plan). The requests
// themselves, their checks, seeds, samplers and finishes, are the
// RequestTable's, as in the paged Engine; this class decides which slot
// holds which branch and when it runs.
//
// One slot holds one branch for its whole life. Each step():
//   1. decode: every slot holding a sampled token runs through ONE generate
//      plan of batch B (idle slots are padding rows), and samples its next
//      token; finished slots are freed at once;
//   2. admit: waiting requests, first come first served, take free slots (a
//      request of n branches waits for n of them); each branch's slot is
//      prefilled chunk by chunk through the prefill plan and samples its
//      first token from the prefill logits. With a KV disk tier, the
//      longest prefix of whole blocks the tier holds (when longer than what
//      the slot keeps) is restored into the slot first, and the prefill
//      plan starts after it; the prompt's full blocks are written through.
// With StaticBatchOptions::reuse_slots a slot keeps its K/V when its branch
// ends, and a branch starts in the free slot sharing the longest prefix with
// its prompt: the slot is cut back to that prefix and up to prefill_chunk
// new prompt tokens go through the generate plan one step each (the prefill
// plan starts at position 0); with more, the whole prompt is prefilled.
// A request is rejected up front (RequestRejected) when no slot layout can
// ever serve it: n > B, a prompt over max_prompt_len (unless
// OverflowPolicy::TruncateLeft, which keeps its last max_prompt_len tokens),
// or prompt + max_tokens over the slot capacity. A branch ends "length" at
// max_tokens or when prompt + generated reaches the capacity, "stop" at an
// end-of-generation token (not emitted).
//
// Greedy tokens equal the paged Engine's for the same prompt
// (tests/engine/static_batch_engine_test.cpp). Sampling per branch is the
// Engine's (RequestTable): branch b draws with seed + b, penalties see the
// (kept) prompt.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "engine/generation_backend.h"
#include "engine/request_table.h"
#include "engine/sampling/sampler.h"
#include "engine/static_pipeline/static_prefix_tier.h"
#include "engine/static_pipeline/static_runner.h"

namespace kvforge {

struct StaticBatchOptions {
  std::vector<int32_t> eos_token_ids;  // end generation ("stop") unless ignore_eos
  OverflowPolicy overflow = OverflowPolicy::Error;
  // Free slots keep their K/V for the next request sharing a prefix (the
  // static counterpart of the paged prefix cache; `chat --static` keeps a
  // conversation in its slot between turns this way).
  bool reuse_slots = false;
  // The KV disk tier (engine/kv/kv_disk_tier.h; static_prefix_tier.h):
  // empty = off. Blocks of kv_disk_block_size tokens, shared with the paged
  // engine's files when the block sizes agree. Off, with a warning, for
  // models with sliding-window layers.
  std::string kv_disk_dir{};
  double kv_disk_gib = 4;
  int32_t kv_disk_block_size = 16;
  std::function<void(const std::string&)> on_warning{};  // nullptr: stderr
  // Tensor parallel: the channel between the ranks the model was loaded for
  // (it must outlive the engine); nullptr: one process.
  Communicator* comm = nullptr;
};

class StaticBatchEngine final : public GenerationBackend {
 public:
  // `pool` must have plans.n_threads threads (StaticRunner's rule).
  StaticBatchEngine(const Model& model, ThreadPool& pool, PlanSet plans,
                    StaticBatchOptions options);

  RequestId add_request(std::span<const int32_t> prompt, const SamplingParams& params, int n,
                        LogprobOptions logprobs) override;
  std::vector<StepEvent> step() override;
  bool abort(RequestId id) override;
  bool stop_branch(RequestId id, int branch) override;
  bool has_unfinished() const override { return !waiting_.empty() || occupied_ > 0; }
  // Slots stand in for KV blocks: kv_blocks_total = B, kv_blocks_used =
  // occupied slots; kv_slots_allocated = occupied * capacity, kv_slots_used =
  // positions filled. running/waiting count branches. prefix.tokens_reused:
  // prompt tokens whose K/V a reused slot kept (reuse_slots); restored ones
  // are disk.tokens_restored.
  EngineStats stats() const override;
  // The slot capacity, max_prompt_len + min_response_len.
  int32_t max_sequence_tokens() const override { return runner_.capacity(); }
  // n, or at most max_prompt_len under OverflowPolicy::TruncateLeft.
  int32_t prompt_tokens_kept(int32_t n) const override;

  const StaticRunner& runner() const { return runner_; }
  size_t kv_bytes() const { return kv_bytes_; }  // the static cache, all slots

 private:
  struct Slot {
    RequestId request = -1;  // -1: free
    int branch = 0;
    std::unique_ptr<Sampler> sampler;
    BranchLimits limits;
    int32_t generated = 0;
    int32_t next_token = kIdleSlot;  // sampled, not yet decoded
    std::vector<int32_t> tokens;     // [capacity reserved] whose K/V the slot holds, in order
  };

  void open_disk_tier();
  void check_request(std::span<const int32_t> prompt, const SamplingParams& params, int n,
                     LogprobOptions lp) const;
  void decode_active(std::vector<StepEvent>& events);
  void admit_waiting(std::vector<StepEvent>& events);
  // Samples the slot's next token from `logits`, appends its event, frees the slot when done.
  void sample(int32_t slot, std::span<const float> logits, std::vector<StepEvent>& events);
  void free_slot(int32_t slot);
  // Claims the free slot holding the most of `prompt` for the request's `branch`.
  int32_t claim_slot(RequestId id, int branch, std::span<const int32_t> prompt);
  // Leading positions of what the slot holds that a branch of `prompt` keeps.
  int32_t reusable(int32_t index, std::span<const int32_t> prompt) const;
  // Brings the slot's K/V to `prompt`; returns the last prompt token's logits.
  std::span<const float> fill_slot(int32_t slot, std::span<const int32_t> prompt);

  const Model& model_;
  StaticRunner runner_;
  std::unique_ptr<KvDiskTier> disk_;  // null without kv_disk_dir
  std::unique_ptr<StaticPrefixTier> tier_;
  StaticBatchOptions options_;
  RequestTable requests_;
  std::deque<RequestId> waiting_;
  std::vector<Slot> slots_;           // [B]
  std::vector<int32_t> step_tokens_;  // [B] decode input, reused every step
  size_t kv_bytes_ = 0;
  int32_t occupied_ = 0;
  int64_t steps_ = 0;
  int64_t tokens_computed_ = 0;
  int64_t tokens_reused_ = 0;
};

}  // namespace kvforge
