#include "app/server/engine_loop.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "app/server/openai_error.h"
#include "core/comm/communicator.h"

namespace kvforge::server {

namespace {
// How often an idle loop tells the other ranks of a tensor-parallel run it
// is alive: well inside their deadline (--tp-timeout).
constexpr auto kIdleBeat = std::chrono::milliseconds(1000);
}  // namespace

EngineLoop::EngineLoop(TextEngine& engine, ServerMetrics& metrics, size_t max_outstanding,
                       std::function<void()> on_broken)
    : engine_(engine),
      metrics_(metrics),
      max_outstanding_(max_outstanding),
      on_broken_(std::move(on_broken)) {
  thread_ = std::thread([this] { run(); });
}

EngineLoop::~EngineLoop() { stop(); }

std::shared_ptr<RequestStream> EngineLoop::submit(Submission submission) {
  auto stream = std::make_shared<RequestStream>(submission.options.n);
  {
    std::lock_guard lock(mu_);
    if (stopping_) throw ApiError(503, "the server is shutting down", "server_error");
    if (!broken_.empty())
      throw ApiError(503, "the server cannot serve: " + broken_, "server_error");
    if (outstanding_.load() >= max_outstanding_)
      throw ApiError(429,
                     "the server is at capacity (" + std::to_string(max_outstanding_) +
                         " requests queued or running); retry shortly",
                     "rate_limit_error", std::nullopt, "queue_full");
    ++outstanding_;
    pending_.push_back({std::move(submission), stream});
  }
  cv_.notify_one();
  return stream;
}

void EngineLoop::cancel(const std::shared_ptr<RequestStream>& stream) {
  stream->cancel();
  {
    std::lock_guard lock(mu_);
    cancels_.push_back(stream);
  }
  cv_.notify_one();
}

std::future<void> EngineLoop::run_between_steps(std::function<void()> job) {
  std::packaged_task<void()> task(std::move(job));
  std::future<void> done = task.get_future();
  {
    std::lock_guard lock(mu_);
    if (stopping_) throw ApiError(503, "the server is shutting down", "server_error");
    jobs_.push_back(std::move(task));
  }
  cv_.notify_one();
  return done;
}

std::vector<EngineLoop::RunningRequest> EngineLoop::running() const {
  std::lock_guard lock(running_mu_);
  return running_;
}

std::string EngineLoop::broken() const {
  std::lock_guard lock(mu_);
  return broken_;
}

void EngineLoop::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void EngineLoop::run() {
  while (true) {
    std::deque<Pending> pending;
    std::vector<std::shared_ptr<RequestStream>> cancels;
    std::deque<std::packaged_task<void()>> jobs;
    bool stopping;
    {
      std::unique_lock lock(mu_);
      const auto work = [&] {
        return stopping_ || !pending_.empty() || !cancels_.empty() || !jobs_.empty();
      };
      if ((!engine_.has_unfinished() || !broken_.empty()) && !cv_.wait_for(lock, kIdleBeat, work)) {
        lock.unlock();
        beat();
        continue;
      }
      pending.swap(pending_);
      cancels.swap(cancels_);
      jobs.swap(jobs_);
      stopping = stopping_;
    }
    if (stopping) {
      for (auto& p : pending) p.stream->reject(503, "the server is shutting down");
      for (auto& [id, stream] : active_) {
        engine_.abort(id);
        stream->close();
      }
      active_.clear();
      return;
    }
    if (!broken().empty()) {
      for (auto& p : pending) p.stream->reject(503, "the server cannot serve: " + broken());
      outstanding_ -= pending.size();
      continue;
    }
    apply_cancels(cancels);
    admit(pending);
    for (auto& job : jobs) job();  // its exception goes to its future
    if (engine_.has_unfinished()) step_engine();
    metrics_.publish_engine_stats(engine_.engine().stats());
    metrics_.in_flight.set(static_cast<double>(active_.size()));
  }
}

void EngineLoop::admit(std::deque<Pending>& pending) {
  for (Pending& p : pending) {
    if (p.stream->cancelled()) {  // the client left before the request was admitted
      metrics_.client_disconnects.inc();
      p.stream->close();
      --outstanding_;
      continue;
    }
    try {
      const RequestId id =
          engine_.add_tokens(p.submission.prompt, p.submission.sampling, p.submission.options);
      active_[id] = p.stream;
      prompts_[id] = p.submission.prompt;
      {
        std::lock_guard lock(running_mu_);
        running_.push_back(
            {id, static_cast<int>(p.submission.prompt.size()), 0, p.submission.options.n});
      }
      p.stream->accept(id);
      metrics_.prompt_tokens.inc(static_cast<double>(p.submission.prompt.size()));
    } catch (const RequestRejected& e) {
      p.stream->reject(400, e.what());
      --outstanding_;
    } catch (const std::exception& e) {
      p.stream->reject(500, std::string("the engine could not take the request: ") + e.what());
      --outstanding_;
    }
  }
}

void EngineLoop::apply_cancels(std::vector<std::shared_ptr<RequestStream>>& cancels) {
  for (const auto& stream : cancels) {
    const auto id = stream->id();
    if (!id) continue;  // not admitted yet: admit() drops it
    const auto it = active_.find(*id);
    if (it == active_.end()) continue;  // finished meanwhile
    engine_.abort(*id);
    metrics_.client_disconnects.inc();
    finish(*id);
  }
}

// Idle: a tensor-parallel leader's heartbeat (nothing on one process).
void EngineLoop::beat() {
  if (!broken().empty()) return;
  try {
    engine_.engine().idle();
  } catch (const CommunicationError& e) {
    fail_all(e.what());
  }
}

// The run lost a rank: every request fails with 503, and so will new ones.
void EngineLoop::fail_all(const std::string& why) {
  std::fprintf(stderr, "kvforge serve: cannot serve any more: %s\n", why.c_str());
  {
    std::lock_guard lock(mu_);
    broken_ = why;
  }
  std::vector<RequestId> ids;
  for (const auto& [id, stream] : active_) ids.push_back(id);
  for (RequestId id : ids) {
    active_[id]->reject(503, "the server cannot serve: " + why);
    finish(id);
  }
  if (on_broken_) on_broken_();
}

void EngineLoop::step_engine() {
  std::vector<TextEvent> events;
  try {
    events = engine_.step();
  } catch (const CommunicationError& e) {
    fail_all(e.what());
    return;
  } catch (const std::exception& e) {
    // Not expected; fail every request rather than the process, and keep serving.
    std::fprintf(stderr, "kvforge serve: engine step failed: %s\n", e.what());
    std::vector<RequestId> ids;
    for (const auto& [id, stream] : active_) ids.push_back(id);
    for (RequestId id : ids) {
      engine_.abort(id);
      active_[id]->reject(500, std::string("generation failed: ") + e.what());
      finish(id);
    }
    return;
  }
  for (TextEvent& ev : events) {
    const auto it = active_.find(ev.request);
    if (it == active_.end()) continue;
    if (ev.token) {
      metrics_.generation_tokens.inc();
      count_decoded(ev.request);
    }
    if (ev.result) record_timings(*ev.result);
    if (ev.result && ev.branch == 0) record_slot(ev.request, *ev.result);
    const RequestId id = ev.request;
    if (it->second->push(std::move(ev))) finish(id);
  }
}

void EngineLoop::count_decoded(RequestId id) {
  std::lock_guard lock(running_mu_);
  for (RunningRequest& r : running_)
    if (r.id == id) ++r.decoded;
}

void EngineLoop::finish(RequestId id) {
  const auto it = active_.find(id);
  if (it == active_.end()) return;
  {
    std::lock_guard lock(running_mu_);
    std::erase_if(running_, [id](const RunningRequest& r) { return r.id == id; });
  }
  it->second->close();
  active_.erase(it);
  prompts_.erase(id);
  --outstanding_;
}

void EngineLoop::record_timings(const BranchResult& result) {
  if (result.tokens.empty()) return;
  metrics_.ttft.observe(result.timings.ttft_seconds);
  for (double s : result.timings.inter_token_seconds) metrics_.inter_token.observe(s);
  metrics_.request_duration.observe(result.timings.total_seconds);
}

void EngineLoop::record_slot(RequestId id, const BranchResult& result) {
  const auto prompt = prompts_.find(id);
  if (prompt == prompts_.end()) return;
  size_t slot = 0;
  {
    std::lock_guard lock(running_mu_);
    const auto it = std::find_if(running_.begin(), running_.end(),
                                 [id](const RunningRequest& r) { return r.id == id; });
    if (it == running_.end()) return;
    slot = size_t(it - running_.begin());
  }
  std::vector<int32_t> tokens = prompt->second;
  tokens.insert(tokens.end(), result.tokens.begin(), result.tokens.end());
  set_slot_tokens(slot, std::move(tokens));
}

std::vector<int32_t> EngineLoop::slot_tokens(size_t slot) const {
  return slot < slot_tokens_.size() ? slot_tokens_[slot] : std::vector<int32_t>{};
}

void EngineLoop::set_slot_tokens(size_t slot, std::vector<int32_t> tokens) {
  std::lock_guard lock(running_mu_);
  if (slot_tokens_.size() <= slot) slot_tokens_.resize(slot + 1);
  slot_tokens_[slot] = std::move(tokens);
}

std::vector<size_t> EngineLoop::slot_token_counts() const {
  std::lock_guard lock(running_mu_);
  std::vector<size_t> out;
  for (const std::vector<int32_t>& t : slot_tokens_) out.push_back(t.size());
  return out;
}

}  // namespace kvforge::server
