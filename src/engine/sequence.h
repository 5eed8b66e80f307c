// The state of one sequence in the batching engine: one branch of a request,
// its tokens so far, how many of them have K/V in the pool, and its sampler
// (the request's own state is the RequestTable's).
//
// The K/V invariant the scheduler keeps: a running sequence holds blocks for
// exactly n_computed positions between steps (BlockManager::seq_tokens); a
// waiting one holds none (n_computed = 0). tokens[n_computed..] still have to
// be fed through the model: the whole prompt at first (in chunks), then the
// one token sampled last step (a decode), or everything again after a
// preemption (recompute).
//
// A sequence admitted with prefix blocks on a lower tier (the disk) is
// `loading` until they land: it holds blocks for its RAM prefix (n_computed)
// plus the blocks being restored, and is not scheduled.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/kv/block_manager.h"
#include "engine/sampling/sampler.h"
#include "kvforge/engine.h"

namespace kvforge {

struct Sequence {
  SeqId id = 0;  // KV sequence id (BlockManager, KvStore)
  RequestId request = 0;
  int branch = 0;               // 0..n-1 within the request
  std::vector<int32_t> tokens;  // [n_prompt + generated]
  int32_t n_prompt = 0;
  int32_t n_computed = 0;  // leading tokens whose K/V is in the pool
  int32_t max_tokens = 0;  // generated tokens allowed
  int32_t max_len = 0;     // total tokens allowed (context / pool)
  bool shifts = false;     // a context shift makes room at the context's end
  int32_t n_keep = 1;      // tokens a context shift keeps (rounded up to whole blocks)
  int32_t n_dropped = 0;   // tokens a context shift removed from `tokens`
  int pending_forks = 0;   // branches to fork off when the prompt is computed
  bool loading = false;    // waiting for a lower tier to restore its prefix blocks
  // Prompt tokens whose K/V the first admission took from a cache (the RAM
  // prefix cache, a kept static slot, blocks restored from the disk tier)
  // instead of computing them: StepEvent::cached_tokens. A preemption does not
  // change it (recomputing after one is the engine's cost, not the request's).
  int32_t n_cached = 0;
  bool preempted = false;
  std::unique_ptr<Sampler> sampler;

  int32_t len() const { return int32_t(tokens.size()); }
  int32_t n_generated() const { return len() + n_dropped - n_prompt; }
  // Tokens to feed before the next sample.
  int32_t n_pending() const { return len() - n_computed; }
  // Sequences this one stands for when counted against max_seqs.
  int width() const { return 1 + pending_forks; }
};

}  // namespace kvforge
