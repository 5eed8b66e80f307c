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
//      With a lower tier (set_prefix_tier, the disk), the prompt blocks past
//      the RAM prefix that the tier holds are read and installed at
//      admission, synchronously, before the step's forward pass: they cost
//      no token budget, and the sequence starts computing after them.
// Blocks are reserved here (allocate / append); the runner computes them.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "engine/kv/block_manager.h"
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
  Scheduler(BlockManager& blocks, SchedulerOptions options);

  // Queues a new sequence at the back of the waiting queue.
  void add(std::unique_ptr<Sequence> seq);
  // A tier to restore prefix blocks from at admission (nullptr: none). It
  // must outlive the scheduler.
  void set_prefix_tier(PrefixTier* tier) { tier_ = tier; }
  // Reserves blocks and picks the chunks of the next step. Pointers stay
  // valid until the next call that removes sequences.
  SchedulerOutput schedule();

  // A running sequence joins right behind its parent (a fork after prefill).
  // Its blocks are the caller's business (BlockManager::fork).
  void add_running(std::unique_ptr<Sequence> seq);
  // Removes a sequence, running or waiting, and frees its blocks.
  void remove(const Sequence* seq);
  // Every sequence of the request, running or waiting.
  std::vector<Sequence*> find_request(RequestId request) const;

  bool empty() const { return running_.empty() && waiting_.empty(); }
  int32_t n_running() const { return int32_t(running_.size()); }
  int32_t n_waiting() const { return int32_t(waiting_.size()); }
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
  // Blocks past the RAM prefix of `ram` tokens that the tier restores for
  // `seq` (fetched, waiting for install), as many as the pool can hold next
  // to one computed token.
  int32_t fetch_from_tier(const Sequence& seq, int32_t ram);

  BlockManager& blocks_;
  PrefixTier* tier_ = nullptr;
  SchedulerOptions options_;
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;  // admission order, oldest first
  int64_t preemptions_ = 0;
};

}  // namespace kvforge
