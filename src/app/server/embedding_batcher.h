// Embedding inputs from every request computed together: each input waits in
// one queue; a batch takes the queue's inputs, up to a bound, and is embedded
// one forward call (EmbeddingRun::step, up to 256 tokens) between two engine
// steps, so generation waits at most one such call per token, however many
// inputs are queued. Each vector is the same bits as its input alone. One job
// at a time is queued on the engine loop; it queues the next while a batch or
// an input is left. Nothing of the engine's KV pool is used: a batch's cache
// is its own, freed when the batch ends.
#pragma once

#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <vector>

#include "app/embedding/embedding_run.h"
#include "app/server/engine_loop.h"

namespace kvforge::server {

class EmbeddingBatcher {
 public:
  // A batch holds at most this many inputs, and this many token slots (inputs
  // x the longest of them: the batch's KV cache); a longer input runs alone.
  static constexpr size_t kMaxInputs = 64;
  static constexpr size_t kMaxSlots = 8192;

  EmbeddingBatcher(const Embedder& embedder, EngineLoop& loop);

  // Queues `tokens`; the future holds its embedding, or the Embedder's
  // exception, or ApiError 503 when the engine loop stops first.
  std::future<std::vector<float>> submit(std::vector<int32_t> tokens);

 private:
  struct Pending {
    std::vector<int32_t> tokens;
    std::promise<std::vector<float>> result;
  };
  struct Active {  // the batch being embedded
    std::vector<Pending> inputs;
    std::unique_ptr<EmbeddingRun> run;
  };
  std::vector<Pending> take_batch();  // up to the bounds, in queue order
  void schedule();                    // queues the next job on the engine loop
  void advance();                     // the job: one forward call (the loop's thread)
  void step_active();                 // run_mu_ held
  void start_batch();                 // run_mu_ held
  void embed_each_alone(std::vector<Pending>& inputs);  // after a batch failed
  void fail_all();                                      // the job was dropped: the loop is stopping

  const Embedder& embedder_;
  EngineLoop& loop_;
  std::mutex mu_;  // guards queue_ and scheduled_
  std::deque<Pending> queue_;
  bool scheduled_ = false;  // a job is queued on the loop
  std::mutex run_mu_;       // guards active_; taken before mu_ when both are held
  std::unique_ptr<Active> active_;
};

}  // namespace kvforge::server
