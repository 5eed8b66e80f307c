// The single thread that owns the engine. HTTP threads hand it work through
// a queue (submit, cancel); it adds requests, steps the engine, and pushes
// each event into the request's RequestStream — never touching a socket, so
// a slow or vanished client cannot stall generation for everybody else.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "app/server/request_stream.h"
#include "app/server/server_metrics.h"
#include "app/text_engine.h"

namespace kvforge::server {

struct Submission {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  TextRequestOptions options;
};

class EngineLoop {
 public:
  // `max_outstanding`: requests accepted or queued and not finished; beyond
  // it submit() answers 429. The engine and metrics must outlive the loop.
  // `on_broken`: called (from the loop's thread) once the engine can no
  // longer serve: a rank of a tensor-parallel run died or stopped answering.
  // From then on every request is answered 503; the server should exit.
  EngineLoop(TextEngine& engine, ServerMetrics& metrics, size_t max_outstanding,
             std::function<void()> on_broken = {});
  ~EngineLoop();  // stop()

  // Queues a request. Throws ApiError 429 (with a retry hint) when the queue
  // is full, 503 once stopping.
  std::shared_ptr<RequestStream> submit(Submission submission);
  // The client left: abort the request in the engine (its KV blocks are freed).
  void cancel(const std::shared_ptr<RequestStream>& stream);
  // Runs `job` on the loop's thread between two engine steps (work that
  // needs the engine's thread pool, such as an embedding's forward pass).
  // The future throws std::future_error (broken promise) when the loop stops
  // first, and what the job threw otherwise. Throws ApiError 503 once stopping.
  std::future<void> run_between_steps(std::function<void()> job);
  // Closes every stream and joins the thread.
  void stop();

  size_t outstanding() const { return outstanding_.load(); }

  // A request the engine runs, as GET /slots reports it (slots_route.h).
  struct RunningRequest {
    RequestId id = 0;
    int prompt_tokens = 0;
    int decoded = 0;  // tokens generated so far, over its branches
    int branches = 1;
  };
  // Thread-safe snapshot, in admission order.
  std::vector<RunningRequest> running() const;
  // Why the engine can no longer serve; empty while it can.
  std::string broken() const;

  // For a run_between_steps job only (the loop's thread): the text engine,
  // and what each GET /slots entry last held for llama-server's slot save
  // and restore (slot_files.h): the prompt and branch 0's generated tokens
  // of the last request that finished as that entry (entries are the running
  // requests in admission order), or what a restore put there.
  TextEngine& engine() { return engine_; }
  std::vector<int32_t> slot_tokens(size_t slot) const;
  void set_slot_tokens(size_t slot, std::vector<int32_t> tokens);
  // Thread-safe: how many tokens each entry holds (GET /slots' n_prompt_tokens of an idle one).
  std::vector<size_t> slot_token_counts() const;

 private:
  struct Pending {
    Submission submission;
    std::shared_ptr<RequestStream> stream;
  };
  void run();
  void admit(std::deque<Pending>& pending);
  void apply_cancels(std::vector<std::shared_ptr<RequestStream>>& cancels);
  void step_engine();
  void finish(RequestId id);
  void count_decoded(RequestId id);
  void record_timings(const BranchResult& result);
  void record_slot(RequestId id, const BranchResult& result);
  void beat();
  void fail_all(const std::string& why);

  TextEngine& engine_;
  ServerMetrics& metrics_;
  const size_t max_outstanding_;
  const std::function<void()> on_broken_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> pending_;
  std::vector<std::shared_ptr<RequestStream>> cancels_;
  std::deque<std::packaged_task<void()>> jobs_;
  bool stopping_ = false;
  std::string broken_;  // set once by the loop thread, read by submit()
  std::atomic<size_t> outstanding_{0};

  mutable std::mutex running_mu_;
  std::vector<RunningRequest> running_;  // written by the loop thread, read by running()

  // Loop thread only.
  std::unordered_map<RequestId, std::shared_ptr<RequestStream>> active_;
  std::unordered_map<RequestId, std::vector<int32_t>> prompts_;  // of the active requests
  std::vector<std::vector<int32_t>> slot_tokens_;  // [slot entry]; written under running_mu_
  std::thread thread_;
};

}  // namespace kvforge::server
