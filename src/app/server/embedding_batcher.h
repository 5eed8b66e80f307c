// Embedding inputs from every request computed together: each input waits in
// one queue, and a job on the engine loop's thread (between two engine steps)
// takes the queue's inputs, up to a bound, and embeds them in one batch
// (Embedder::embed_batch: the same bits as each alone). Every caller queues
// one job per input, so an input is always taken by its own job or an earlier
// one, and a job whose inputs are gone does nothing. Nothing of the engine's
// KV pool is used: the batch's cache is its own, freed when the job ends.
#pragma once

#include <cstdint>
#include <deque>
#include <future>
#include <mutex>
#include <vector>

#include "app/embedding/embedder.h"
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
  std::vector<Pending> take_batch();  // up to the bounds, in queue order
  void run_batch();                   // on the engine loop's thread
  void fail_queued();                 // a job was dropped: the loop is stopping

  const Embedder& embedder_;
  EngineLoop& loop_;
  std::mutex mu_;
  std::deque<Pending> queue_;
};

}  // namespace kvforge::server
