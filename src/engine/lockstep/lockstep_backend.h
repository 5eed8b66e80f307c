// One scheduler for all ranks of a tensor-parallel run, by lockstep: every
// rank runs the same engine (scheduler, block manager, prefix cache,
// samplers) on its share of the model, and rank 0 alone talks to the world.
// Rank 0 drives a LockstepLeader; before each step it broadcasts the
// requests added, aborted and stopped since the last one (step_message.h),
// and the other ranks, in follow_leader(), apply them to their own engine
// and step it too.
//
// Why lockstep rather than shipping rank 0's step plan (block tables,
// copy-on-write copies) to the others: the engine is a deterministic
// function of its commands and of the logits it samples from, and every
// rank gathers the same logits bit for bit (model/forward.h), so the same
// commands at the same steps give the same plans with no plan format to
// keep in sync with the scheduler. Nothing in a step depends on time, thread
// count or memory (seeds are fixed by rank 0, request ids are checked).
// Should the ranks ever diverge, forward() compares a digest of every
// step's inputs across ranks and throws on all of them.
#pragma once

#include <memory>
#include <vector>

#include "core/comm/communicator.h"
#include "engine/generation_backend.h"
#include "engine/lockstep/step_message.h"

namespace kvforge {

class LockstepLeader final : public GenerationBackend {
 public:
  // `inner`: rank 0's own engine; `comm` must outlive this object.
  LockstepLeader(std::unique_ptr<GenerationBackend> inner, Communicator& comm);
  // Tells the other ranks the run is over (Shutdown); errors are swallowed.
  ~LockstepLeader() override;

  RequestId add_request(std::span<const int32_t> prompt, const SamplingParams& params, int n,
                        LogprobOptions logprobs) override;
  std::vector<StepEvent> step() override;
  bool abort(RequestId id) override;
  bool stop_branch(RequestId id, int branch) override;
  bool has_unfinished() const override { return inner_->has_unfinished(); }
  EngineStats stats() const override { return inner_->stats(); }
  int32_t max_sequence_tokens() const override { return inner_->max_sequence_tokens(); }
  int32_t prompt_tokens_kept(int32_t n) const override { return inner_->prompt_tokens_kept(n); }
  Engine* paged_engine() override { return inner_->paged_engine(); }

  // Sends the pending commands without a step: a heartbeat that tells the
  // others rank 0 is alive while it has nothing to run. Once called, every
  // message promises the next within the deadline (the caller keeps calling
  // it while idle, more often than the deadline).
  void idle() override;
  // Sends Shutdown now (the destructor then sends nothing).
  void shutdown();

 private:
  void send(StepKind kind);

  std::unique_ptr<GenerationBackend> inner_;
  Communicator& comm_;
  std::vector<StepCommand> pending_;
  bool ended_ = false;
  bool heartbeats_ = false;
  bool broken_ = false;  // a collective failed: the others cannot be told anything
};

// Ranks other than 0: receives rank 0's messages and applies them to
// `backend` (built with the same options as rank 0's) until Shutdown.
// Throws std::runtime_error when a rank diverges from rank 0 (a request id
// or a rejection that differs) or a broadcast fails.
void follow_leader(GenerationBackend& backend, Communicator& comm);

}  // namespace kvforge
