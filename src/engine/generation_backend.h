// What the text layer (app/text_engine.h) and the server's engine loop drive:
// token ids in, StepEvents out, one thread, step() until nothing is
// unfinished. Two implementations: the paged batching Engine (PagedBackend,
// below) and the static pipeline's fixed batch slots (StaticBatchEngine).
// They share the request bookkeeping (engine/request_table.h) and differ in
// where K/V lives and when a branch runs; request handling, streaming and
// metrics above them are written once for both.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kvforge/engine.h"

namespace kvforge {

class GenerationBackend {
 public:
  virtual ~GenerationBackend() = default;

  // Queues a request of n branches; throws RequestRejected naming the limit
  // when it can never be served (nothing is queued then).
  virtual RequestId add_request(std::span<const int32_t> prompt, const SamplingParams& params,
                                int n, LogprobOptions logprobs) = 0;
  // One iteration; empty when nothing is unfinished.
  virtual std::vector<StepEvent> step() = 0;
  // Ends every branch now and frees its KV; no event follows.
  virtual bool abort(RequestId id) = 0;
  // Ends one running branch (a stop string matched in the app layer).
  virtual bool stop_branch(RequestId id, int branch) = 0;
  virtual bool has_unfinished() const = 0;
  // For the static slots, a "block" is a whole slot (see StaticBatchEngine::stats).
  virtual EngineStats stats() const = 0;
  // Longest prompt + completion a request may reach.
  virtual int32_t max_sequence_tokens() const = 0;
  // Tokens of an n-token prompt a request computes: n, or fewer where the
  // engine cuts long prompts (the static pipeline under truncate-left keeps
  // the last max_prompt_len).
  virtual int32_t prompt_tokens_kept(int32_t n) const { return n; }
  // Nothing to run for now: a tensor-parallel leader tells the other ranks
  // it is alive (engine/lockstep/); the server calls it about once a second.
  virtual void idle() {}
  // The paged Engine underneath, or null (the static slots).
  virtual Engine* paged_engine() { return nullptr; }
};

// The paged batching Engine behind the interface; owns it.
class PagedBackend final : public GenerationBackend {
 public:
  PagedBackend(const Model& model, ThreadPool& pool, EngineOptions options)
      : engine_(model, pool, std::move(options)) {}

  RequestId add_request(std::span<const int32_t> prompt, const SamplingParams& params, int n,
                        LogprobOptions logprobs) override {
    return engine_.add_request(prompt, params, n, logprobs);
  }
  std::vector<StepEvent> step() override { return engine_.step(); }
  bool abort(RequestId id) override { return engine_.abort(id); }
  bool stop_branch(RequestId id, int branch) override { return engine_.stop_branch(id, branch); }
  bool has_unfinished() const override { return engine_.has_unfinished(); }
  EngineStats stats() const override { return engine_.stats(); }
  int32_t max_sequence_tokens() const override { return engine_.max_sequence_tokens(); }
  Engine* paged_engine() override { return &engine_; }

  Engine& engine() { return engine_; }
  const Engine& engine() const { return engine_; }

 private:
  Engine engine_;
};

}  // namespace kvforge
