#include "app/server/embedding_batcher.h"

#include <algorithm>
#include <functional>
#include <memory>

#include "app/server/openai_error.h"

namespace kvforge::server {

EmbeddingBatcher::EmbeddingBatcher(const Embedder& embedder, EngineLoop& loop)
    : embedder_(embedder), loop_(loop) {}

namespace {

// Held by a queued job: a job dropped unrun (the engine loop stopping) fails
// every queued input, whose own jobs may be dropped too.
struct EmbeddingJobGuard {
  std::function<void()> on_dropped;
  bool ran = false;
  ~EmbeddingJobGuard() {
    if (!ran) on_dropped();
  }
};

}  // namespace

std::future<std::vector<float>> EmbeddingBatcher::submit(std::vector<int32_t> tokens) {
  std::future<std::vector<float>> out;
  {
    std::lock_guard lock(mu_);
    queue_.push_back({std::move(tokens), {}});
    out = queue_.back().result.get_future();
  }
  auto guard = std::make_shared<EmbeddingJobGuard>();
  guard->on_dropped = [this] { fail_queued(); };
  // The job's own future is not needed: the input's promise tells when it is done.
  loop_.run_between_steps([guard, this] {
    guard->ran = true;
    run_batch();
  });
  return out;
}

void EmbeddingBatcher::fail_queued() {
  std::lock_guard lock(mu_);
  for (Pending& p : queue_)
    p.result.set_exception(std::make_exception_ptr(
        ApiError(503, "the server stopped before the embedding was computed", "server_error")));
  queue_.clear();
}

std::vector<EmbeddingBatcher::Pending> EmbeddingBatcher::take_batch() {
  std::lock_guard lock(mu_);
  std::vector<Pending> batch;
  size_t longest = 0;
  while (!queue_.empty() && batch.size() < kMaxInputs) {
    const size_t longer = std::max(longest, queue_.front().tokens.size());
    if (!batch.empty() && longer * (batch.size() + 1) > kMaxSlots) break;
    longest = longer;
    batch.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  return batch;
}

void EmbeddingBatcher::run_batch() {
  std::vector<Pending> batch = take_batch();
  if (batch.empty()) return;
  std::vector<std::vector<int32_t>> inputs;
  for (Pending& p : batch) inputs.push_back(std::move(p.tokens));
  try {
    std::vector<std::vector<float>> vectors = embedder_.embed_batch(inputs);
    for (size_t i = 0; i < batch.size(); ++i) batch[i].result.set_value(std::move(vectors[i]));
    return;
  } catch (...) {
    if (batch.size() == 1) {
      batch[0].result.set_exception(std::current_exception());
      return;
    }
  }
  // One input failed the batch: each alone, so that only its own request fails.
  for (size_t i = 0; i < batch.size(); ++i) {
    try {
      batch[i].result.set_value(embedder_.embed(inputs[i]));
    } catch (...) {
      batch[i].result.set_exception(std::current_exception());
    }
  }
}

}  // namespace kvforge::server
