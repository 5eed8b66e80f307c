// The batching engine, public face: many requests share one paged KV pool and
// one forward pass per step (continuous batching, chunked prefill, prefix
// caching, preemption by recompute). Token ids in, token ids out; text lives
// in the app layer (app/text_engine.h).
//
// Driving it: add_request() any time, then call step() until
// has_unfinished() is false. Each step() schedules up to max_batched_tokens
// tokens of up to max_seqs sequences (running decodes first, then prefill
// chunks), runs them in one forward pass and returns what happened: one
// StepEvent per branch that produced a token or finished. Not thread-safe: one
// thread drives an Engine (the server's engine loop); others talk to it
// through queues.
//
// Greedy decoding gives the same tokens as a single sequence run alone,
// whatever else runs beside it, the block size, chunking, prefix-cache hits,
// preemption or thread count (tests/engine/engine_schedules_test.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/formats/kv_format.h"
#include "core/threadpool.h"
#include "engine/kv/block_manager.h"
#include "engine/sampling/sampler.h"
#include "engine/sampling/sampling_params.h"
#include "model/model.h"

namespace kvforge {

using RequestId = int64_t;

enum class FinishReason {
  Stop,    // an end-of-generation token (not emitted), or a stop string (app layer)
  Length,  // max_tokens reached, or the sequence filled its context
  Abort,   // abort() / stop_branch()
};
// "stop", "length", "abort" (OpenAI's finish_reason spelling).
const char* finish_reason_name(FinishReason reason);

// A request the engine can never serve: empty prompt, a token id outside the
// vocabulary, invalid sampling parameters, or prompt + max_tokens beyond the
// context or the KV pool. The message names the limit and the numbers.
class RequestRejected : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct EngineOptions {
  // KV pool: kv_blocks blocks of block_size positions (power of two, 1..256).
  // kv_blocks = 0: as many blocks as kv_memory_mib holds (storage bytes per
  // block from PagedKvCache::block_bytes), but never more than max_seqs full
  // contexts need.
  int32_t block_size = 16;
  int32_t kv_blocks = 0;
  double kv_memory_mib = 512;
  KvFormat kv_format = {};
  bool enable_prefix_cache = true;

  int32_t max_seqs = 64;               // sequences (branches) in the running set
  int32_t max_batched_tokens = 512;    // tokens per forward pass (decodes + prefill chunks)
  int32_t n_ctx = 0;                   // per-sequence context; 0 = the model's training context
  std::vector<int32_t> eos_token_ids;  // end generation ("stop") unless ignore_eos

  // For tests and debugging: called with the raw logits ([n_vocab]) each
  // branch samples from, before sampling.
  std::function<void(RequestId, int branch, std::span<const float> logits)> on_logits;
};

struct LogprobOptions {
  bool enabled = false;  // report the sampled token's log-probability
  int top = 0;           // and the `top` most likely tokens (needs enabled)
};

struct GeneratedToken {
  int32_t id = 0;
  float logprob = 0;  // raw model log-probability; 0 unless LogprobOptions::enabled
  std::vector<TokenLogprob> top_logprobs;
};

// What one step did to one branch of one request.
struct StepEvent {
  RequestId request = 0;
  int branch = 0;                       // 0..n-1
  std::optional<GeneratedToken> token;  // absent when the step only ended the branch (EOS)
  std::optional<FinishReason> finish;   // set on the branch's last event
};

struct EngineStats {
  int32_t running = 0;  // sequences (branches) holding KV blocks
  int32_t waiting = 0;  // sequences queued for (re)admission
  int32_t kv_blocks_total = 0;
  int32_t kv_blocks_used = 0;      // refcount > 0
  int32_t kv_blocks_free = 0;      // includes evictable prefix-cache blocks
  int64_t kv_slots_allocated = 0;  // kv_blocks_used * block_size
  int64_t kv_slots_used = 0;       // positions holding K/V of running sequences (shared once)
  PrefixCacheStats prefix;
  int64_t preemptions = 0;
  int64_t steps = 0;
  int64_t tokens_computed = 0;   // tokens fed through forward passes (prefill + decode + recompute)
  int64_t tokens_generated = 0;  // tokens sampled
  // Wall time summed over all step() calls, in seconds: the whole calls, the
  // forward passes inside them, and three phases of those passes: the
  // layers' weight matmuls, the output (logits) matmul and attention. What
  // forward leaves of a step is scheduling, K/V block bookkeeping and
  // sampling; what the phases leave of forward is the per-token vector work.
  double step_seconds = 0;
  double forward_seconds = 0;
  double weight_matmul_seconds = 0;
  double output_matmul_seconds = 0;
  double attention_seconds = 0;
};

class Engine {
 public:
  // The model and pool must outlive the engine. Throws std::invalid_argument
  // for bad options (block size, zero budget, a pool of no blocks).
  Engine(const Model& model, ThreadPool& pool, EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request of n branches (parallel sampling: the prompt is
  // computed once, then forked; branch b samples with seed + b when a seed
  // is set). Throws RequestRejected when it can never be served.
  RequestId add_request(std::span<const int32_t> prompt, const SamplingParams& params, int n = 1,
                        LogprobOptions logprobs = {});
  // One scheduling iteration and forward pass; empty when nothing is unfinished.
  std::vector<StepEvent> step();
  // Ends every branch of the request now and frees its blocks; no event
  // follows. False if the request is unknown or already finished.
  bool abort(RequestId id);
  // Ends one branch (a stop string matched in the app layer). False if it is
  // unknown, finished, or does not exist yet: before the prompt is computed
  // and forked a request has only branch 0, which the others wait for (use
  // abort() to end them all).
  bool stop_branch(RequestId id, int branch);
  bool has_unfinished() const;

  EngineStats stats() const;
  int32_t block_size() const;
  int32_t n_blocks() const;
  size_t kv_pool_bytes() const;
  // Longest sequence (prompt + generated) a request may reach:
  // min(context, pool capacity).
  int32_t max_sequence_tokens() const;
  const EngineOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvforge
