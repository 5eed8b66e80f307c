#include "app/server/embedding_batcher.h"

#include <algorithm>
#include <functional>

#include "app/server/openai_error.h"

namespace kvforge::server {

EmbeddingBatcher::EmbeddingBatcher(const Embedder& embedder, EngineLoop& loop)
    : embedder_(embedder), loop_(loop) {}

namespace {

// Held by a queued job: a job dropped unrun (the engine loop stopping) fails
// every input, queued or in the batch being embedded.
struct EmbeddingJobGuard {
  std::function<void()> on_dropped;
  bool ran = false;
  ~EmbeddingJobGuard() {
    if (!ran) on_dropped();
  }
};

std::exception_ptr embedding_stopped() {
  return std::make_exception_ptr(
      ApiError(503, "the server stopped before the embedding was computed", "server_error"));
}

}  // namespace

std::future<std::vector<float>> EmbeddingBatcher::submit(std::vector<int32_t> tokens) {
  std::future<std::vector<float>> out;
  bool idle;
  {
    std::lock_guard lock(mu_);
    queue_.push_back({std::move(tokens), {}});
    out = queue_.back().result.get_future();
    idle = !scheduled_;
    scheduled_ = true;
  }
  if (idle) schedule();
  return out;
}

// scheduled_ is set: this queues the one job.
void EmbeddingBatcher::schedule() {
  auto guard = std::make_shared<EmbeddingJobGuard>();
  guard->on_dropped = [this] { fail_all(); };
  // The job's own future is not needed: each input's promise tells when it is done.
  loop_.run_between_steps([guard, this] {
    guard->ran = true;
    advance();
  });
}

void EmbeddingBatcher::fail_all() {
  {
    std::lock_guard lock(mu_);
    for (Pending& p : queue_) p.result.set_exception(embedding_stopped());
    queue_.clear();
    scheduled_ = false;
  }
  std::lock_guard run_lock(run_mu_);
  if (active_)
    for (Pending& p : active_->inputs) p.result.set_exception(embedding_stopped());
  active_.reset();
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

void EmbeddingBatcher::start_batch() {
  std::vector<Pending> batch = take_batch();
  if (batch.empty()) return;
  std::vector<std::vector<int32_t>> inputs;
  for (const Pending& p : batch) inputs.push_back(p.tokens);
  try {
    auto run = std::make_unique<EmbeddingRun>(embedder_, std::move(inputs));
    active_ = std::make_unique<Active>(Active{std::move(batch), std::move(run)});
  } catch (...) {
    embed_each_alone(batch);
  }
}

void EmbeddingBatcher::advance() {
  bool running;  // a batch is left for the next call
  {
    std::lock_guard run_lock(run_mu_);
    step_active();
    running = active_ != nullptr;
  }
  bool more;
  {
    std::lock_guard lock(mu_);  // alone: run_mu_ comes first when both are held (take_batch)
    more = running || !queue_.empty();
    scheduled_ = more;
  }
  if (!more) return;
  try {
    schedule();
  } catch (...) {  // the loop is stopping
    fail_all();
  }
}

// run_mu_ held: one forward call of the batch, started from the queue if none is.
void EmbeddingBatcher::step_active() {
  if (!active_) start_batch();
  if (!active_) return;
  try {
    active_->run->step();
    if (!active_->run->finished()) return;
    std::vector<std::vector<float>> vectors = active_->run->results();
    for (size_t i = 0; i < vectors.size(); ++i)
      active_->inputs[i].result.set_value(std::move(vectors[i]));
  } catch (...) {
    embed_each_alone(active_->inputs);
  }
  active_.reset();
}

// One input failed the batch: each alone, so that only its own request fails.
void EmbeddingBatcher::embed_each_alone(std::vector<Pending>& inputs) {
  for (Pending& p : inputs) {
    try {
      p.result.set_value(embedder_.embed(p.tokens));
    } catch (...) {
      p.result.set_exception(std::current_exception());
    }
  }
}

}  // namespace kvforge::server
