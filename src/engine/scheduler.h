// Iteration-level scheduling for continuous batching: which sequences run in
// the next forward pass, and how many of their tokens.
//
// Each step has a token budget (max_batched_tokens) and a cap on running
// sequences (max_seqs). In order:
//   1. running decodes (one token each), oldest admission first. A decode
//      that finds no free block preempts the most recently admitted running
//      sequence (possibly itself) by recompute: its blocks are freed and it
//      goes back to the front of the waiting queue with n_computed = 0;
//   2. prefill chunks of running, partly prefilled sequences fill what is
//      left of the budget, as far as free blocks allow (chunked prefill);
//   3. waiting sequences are admitted first come, first served while budget,
//      sequence slots and blocks last (a prefix-cache hit is not recomputed).
//      No admission in a step that preempted: the freed blocks go to the
//      older sequences, not to a newcomer that would be preempted next.
//      With a lower tier (set_prefix_tier, the disk), a sequence whose
//      prompt blocks past the RAM prefix the tier holds is admitted with
//      blocks for them and starts loading them off the engine thread; it
//      costs no token budget and is not scheduled while loading. Loads that
//      ended are taken at the start of each schedule(), without waiting: the
//      sequence then computes the rest of its prompt after the restored
//      blocks (fewer when a file failed to verify: those are recomputed).
//      Only when nothing else can run does schedule() wait for a load.
//      A loading sequence counts against max_seqs and can be preempted or
//      removed like a running one (its load is cancelled first).
// K/V room is reserved here (KvManager admit / append); the step executor
// computes it.
//
// That is the paged policy (schedule()). The static slots (the engine's
// static mode) take the other one, in two phases a step runs one after the
// other: schedule_decodes() gives every running sequence its decode (one
// generate plan for all slots), then admit_next() admits waiting sequences
// first come, first served, each with its whole prompt (the static runner
// chunks it) as soon as the manager holds all its branches (width). With a
// tier, each admitted branch may load its prompt blocks past what its slot
// keeps (load_prefix) through the same loading state, and the step fills its
// slot once land_loads() reports it.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "engine/kv/kv_manager.h"
#include "engine/kv/prefix_tier.h"
#include "engine/sequence.h"

namespace kvforge {

struct SchedulerOptions {
  int32_t max_seqs = 64;
  int32_t max_batched_tokens = 512;
};

// Tokens [start, start + n) of `seq` run this step; logits are wanted when
// they end the sequence's pending tokens (the next token gets sampled).
struct ScheduledChunk {
  Sequence* seq;
  int32_t start;
  int32_t n;
  bool wants_logits;
};

struct SchedulerOutput {
  std::vector<ScheduledChunk> chunks;  // decodes first, then prefill chunks
  int32_t n_tokens = 0;
  int32_t n_preempted = 0;
};

class Scheduler {
 public:
  // `kv` must outlive the scheduler.
  Scheduler(KvManager& kv, SchedulerOptions options);

  // Queues a new sequence at the back of the waiting queue.
  void add(std::unique_ptr<Sequence> seq);
  // A tier to restore prefix blocks from at admission (nullptr: none). It
  // must outlive the scheduler.
  void set_prefix_tier(PrefixTier* tier) { tier_ = tier; }
  // Reserves blocks and picks the chunks of the next step. Pointers stay
  // valid until the next call that removes sequences.
  SchedulerOutput schedule();
  // The static policy: the decodes of the running sequences (no budget: the
  // manager grants every one), then whole-prompt admissions one by one.
  SchedulerOutput schedule_decodes();
  // Admits the oldest waiting sequence with its whole prompt past what the
  // manager reuses, if the manager can hold it and max_seqs its width; its
  // forks are the caller's business. Nothing (no overtaking) otherwise.
  std::optional<ScheduledChunk> admit_next();
  // The static policy, for an admitted branch whose slot is not filled yet:
  // starts loading its prompt blocks past the whole blocks it keeps (its
  // n_computed, cut back to them) from the tier and returns true (it is
  // loading); false, with the blocks counted as misses, when the tier holds
  // none of them.
  bool load_prefix(Sequence& seq);
  // Loading sequences whose loads ended leave the loading state, holding
  // what was restored; returns them. Never blocks unless `wait` (then until
  // one has ended, if any is loading). schedule() calls it itself.
  std::vector<Sequence*> land_loads(bool wait);

  // A running sequence joins right behind its parent (a fork after prefill).
  // Its K/V is the caller's business (BlockManager::fork, or a static slot).
  void add_running(std::unique_ptr<Sequence> seq);
  // Removes a sequence, running or waiting, and frees its blocks.
  void remove(const Sequence* seq);
  // Every sequence of the request, running or waiting.
  std::vector<Sequence*> find_request(RequestId request) const;

  bool empty() const { return running_.empty() && waiting_.empty(); }
  int32_t n_running() const { return int32_t(running_.size()); }
  int32_t n_waiting() const { return int32_t(waiting_.size()); }
  // Branches the waiting sequences stand for (a request of n waits as one).
  int32_t waiting_width() const;
  int32_t n_loading() const { return n_loading_; }
  int64_t preemptions() const { return preemptions_; }
  const std::vector<std::unique_ptr<Sequence>>& running() const { return running_; }
  const SchedulerOptions& options() const { return options_; }

 private:
  int running_width() const;
  void preempt_last();
  // Largest n in [0, want] the sequence can grow by now.
  int32_t appendable(const Sequence& seq, int32_t want) const;
  void schedule_decodes(SchedulerOutput& out, int32_t& budget);
  void schedule_prefill_chunks(SchedulerOutput& out, int32_t& budget);
  void admit_waiting(SchedulerOutput& out, int32_t& budget);
  // Blocks past the RAM prefix of `ram` tokens that the tier could restore
  // for `seq`, as many as the pool can hold next to one computed token.
  int32_t tier_blocks(const Sequence& seq, int32_t ram) const;
  // Starts loading n tier blocks of seq from from_block on (true), or, for
  // n = 0, counts the `eligible` prompt blocks as tier misses.
  bool begin_load(Sequence& seq, int32_t from_block, int32_t n, int32_t eligible);
  // Frees a running (or loading) sequence's blocks, its load cancelled first.
  void release(Sequence& seq);

  KvManager& kv_;
  PrefixTier* tier_ = nullptr;
  SchedulerOptions options_;
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;  // admission order, oldest first
  int64_t preemptions_ = 0;
  int32_t n_loading_ = 0;
};

}  // namespace kvforge
