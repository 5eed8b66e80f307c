#include "core/threadpool.h"

#include <immintrin.h>

#include <stdexcept>

namespace kvforge {
namespace {
// Threads spin this many rounds before yielding or sleeping: a decode step
// opens a parallel region every few microseconds, far cheaper to catch
// spinning than through a futex wake-up, while an idle pool still sleeps.
constexpr int kSpinRounds = 1 << 14;
constexpr uint32_t kMaxChunks = 0xffff;

uint32_t ticket_generation(uint64_t t) { return uint32_t(t >> 32); }
uint32_t ticket_chunks(uint64_t t) { return uint32_t(t >> 16) & 0xffff; }
uint32_t ticket_next(uint64_t t) { return uint32_t(t) & 0xffff; }
}  // namespace

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(std::max(1, n_threads)), ranges_(size_t(std::max(1, n_threads))) {
  workers_.reserve(size_t(n_threads_ - 1));
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  wake_.fetch_add(1, std::memory_order_acq_rel);
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::dispatch(uint32_t n_chunks, void* ctx, Trampoline call) {
  if (n_chunks > kMaxChunks) throw std::invalid_argument("ThreadPool: too many chunks");
  if (n_threads_ == 1 || n_chunks <= 1) {
    for (uint32_t c = 0; c < n_chunks; ++c) call(ctx, c);
    return;
  }
  // The previous job is complete, so no thread reads these until the ticket below.
  job_ctx_ = ctx;
  job_call_ = call;
  chunks_done_.store(0, std::memory_order_relaxed);
  const uint32_t gen = ++generation_counter_;
  ticket_.store((uint64_t{gen} << 32) | (uint64_t{n_chunks} << 16), std::memory_order_release);
  wake_.store(gen, std::memory_order_release);
  wake_.notify_all();
  work_on(gen);
  for (int spins = 0; chunks_done_.load(std::memory_order_acquire) != n_chunks; ++spins) {
    if (spins < kSpinRounds) {
      _mm_pause();
    } else {
      std::this_thread::yield();
    }
  }
}

bool ThreadPool::take_range(int i, size_t count, size_t grain, bool front, size_t& begin,
                            size_t& end) {
  std::atomic<uint64_t>& bounds = ranges_[size_t(i)].bounds;
  uint64_t cur = bounds.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t f = cur >> 32, b = cur & 0xffffffffu;
    if (f >= b) return false;
    // Cut at multiples of grain: f is one, and only the last range's back
    // (n) may not be, so a piece from the back starts at one rounded down.
    const uint64_t cut = front ? std::min<uint64_t>(b, f + count)
                               : std::max<uint64_t>(f, b > count ? (b - count) / grain * grain : 0);
    const uint64_t next = front ? (cut << 32) | b : (f << 32) | cut;
    // Relaxed: the indices are all the state; the region's end is the barrier.
    if (bounds.compare_exchange_weak(cur, next, std::memory_order_relaxed)) {
      begin = size_t(front ? f : cut);
      end = size_t(front ? cut : b);
      return true;
    }
  }
}

void ThreadPool::work_on(uint32_t generation) {
  uint64_t t = ticket_.load(std::memory_order_acquire);
  for (;;) {
    if (ticket_generation(t) != generation || ticket_next(t) >= ticket_chunks(t)) return;
    if (!ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel,
                                       std::memory_order_acquire))
      continue;
    // The claimed chunk is not done, so the job (ctx, call) is still this generation's.
    job_call_(job_ctx_, ticket_next(t));
    chunks_done_.fetch_add(1, std::memory_order_acq_rel);
    t = ticket_.load(std::memory_order_acquire);
  }
}

void ThreadPool::worker_loop() {
  uint32_t seen = 0;
  for (;;) {
    uint32_t gen = wake_.load(std::memory_order_acquire);
    for (int spins = 0; gen == seen && spins < kSpinRounds; ++spins) {
      _mm_pause();
      gen = wake_.load(std::memory_order_acquire);
    }
    while (gen == seen) {
      wake_.wait(seen, std::memory_order_acquire);
      gen = wake_.load(std::memory_order_acquire);
    }
    seen = gen;
    if (stop_.load(std::memory_order_acquire)) return;
    work_on(gen);
  }
}

}  // namespace kvforge
