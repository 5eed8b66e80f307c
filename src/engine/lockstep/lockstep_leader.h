// One scheduler for all ranks of a tensor-parallel run, by lockstep: every
// rank runs the same engine (scheduler, block manager, prefix cache,
// samplers) on its share of the model, and rank 0 alone talks to the world.
// Rank 0's Engine leads (Engine::lead): it hands each command it takes to a
// LockstepLeader, which broadcasts the requests added, aborted and stopped
// since the last step before each step (step_message.h), and the other
// ranks, in follow_leader(), apply them to their own Engine and step it too.
// Both KV modes (paged blocks, static slots) lead and follow alike.
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

#include <functional>
#include <span>
#include <vector>

#include "core/comm/communicator.h"
#include "engine/lockstep/follower_grammars.h"
#include "engine/lockstep/step_message.h"
#include "kvforge/engine.h"

namespace kvforge {

class LockstepLeader {
 public:
  // `comm` must outlive this object; `unfinished` says whether the engine
  // has work (the next message then comes within the deadline).
  LockstepLeader(Communicator& comm, std::function<bool()> unfinished);
  // Tells the other ranks the run is over (Shutdown); errors are swallowed.
  ~LockstepLeader();
  LockstepLeader(const LockstepLeader&) = delete;
  LockstepLeader& operator=(const LockstepLeader&) = delete;

  // Commands the engine took, sent with the next message. `params` carries
  // the seed rank 0 samples with: every rank samples in lockstep.
  void added(RequestId id, std::span<const int32_t> prompt, const SamplingParams& params, int n,
             LogprobOptions logprobs);
  void aborted(RequestId id);
  void stopped(RequestId id, int branch);
  // Sends the pending commands and a step, which the others run too.
  void step() { send(StepKind::Step); }
  // Sends the pending commands without a step: a heartbeat that tells the
  // others rank 0 is alive while it has nothing to run. Once called, every
  // message promises the next within the deadline (the caller keeps calling
  // it while idle, more often than the deadline).
  void idle();
  // Sends Shutdown now (the destructor then sends nothing).
  void shutdown();
  // A collective failed: the others cannot be told anything any more.
  void broke() { broken_ = true; }

 private:
  void send(StepKind kind);

  Communicator& comm_;
  std::function<bool()> unfinished_;
  std::vector<StepCommand> pending_;
  bool ended_ = false;
  bool heartbeats_ = false;
  bool broken_ = false;
};

// Ranks other than 0: receives rank 0's messages and applies them to
// `engine` (built with the same options, or plans, as rank 0's) until
// Shutdown; requests constrained by a grammar get its rules bound to
// `vocabulary` (the tokenizer's, as rank 0 binds them). Throws
// std::runtime_error when a rank diverges from rank 0 (a request id or a
// rejection that differs) or a broadcast fails.
void follow_leader(Engine& engine, Communicator& comm, GrammarVocabularySource vocabulary = {});

}  // namespace kvforge
