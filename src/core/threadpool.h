// One pool of persistent worker threads for all parallel work (`-t` threads in
// total: the calling thread is worker 0, so there is no oversubscription).
//
// A parallel region is cut into chunks that threads claim one at a time from
// a shared ticket, the caller included. If a worker is descheduled (a busy
// machine) before it claims a chunk, the others take it instead of waiting;
// parallel_for cuts one chunk per thread (see there), so a worker descheduled
// in the middle of its chunk still delays the region. Nothing is allocated
// per region.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace kvforge {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads = 1);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(i, n) for every i in [0, n) with n = size(), each call on some
  // thread of the pool, and returns when all have returned. At most one call
  // with a given i runs at a time, so i can index per-thread scratch.
  // Not reentrant.
  template <class F>
  void run(F&& fn) {
    const int n = n_threads_;
    for_each_chunk(uint32_t(n), [&](uint32_t i) { fn(int(i), n); });
  }

  // Splits [0, n) into ranges (multiples of `grain` except the last) and calls
  // fn(begin, end) for each, in parallel.
  template <class F>
  void parallel_for(size_t n, F&& fn, size_t grain = 1) {
    if (n == 0) return;
    grain = std::max<size_t>(1, grain);
    const size_t units = (n + grain - 1) / grain;
    // One contiguous chunk per thread: each thread streams one long range
    // (for the matmuls, its rows). Chunks are still claimed, not assigned, so
    // a worker that has not started yet leaves its chunk to the others. More
    // chunks per thread balance better but decode much slower, because
    // interleaved chunks cut each thread's memory stream into pieces.
    const size_t n_chunks = std::min(units, size_t(n_threads_) * kChunksPerThread);
    if (n_threads_ == 1 || n_chunks == 1) {
      fn(size_t{0}, n);
      return;
    }
    for_each_chunk(uint32_t(n_chunks), [&](uint32_t c) {
      const size_t begin = std::min(n, units * c / n_chunks * grain);
      const size_t end = std::min(n, units * (c + 1) / n_chunks * grain);
      if (begin < end) fn(begin, end);
    });
  }

  // parallel_for's split (one contiguous range per thread, edges multiples
  // of grain), with work stealing: each thread takes its own range `own`
  // indices at a time from the front, then what is left of the others'
  // ranges `steal` at a time from their backs. A thread slowed by a busy
  // core leaves the tail of its range to the others, while each thread still
  // walks forward through its own range (the matmuls' weight streams; their
  // kernels prefetch ahead across the pieces). own and steal are rounded up
  // to multiples of grain; n < 2^32 (else this is parallel_for). Not reentrant.
  template <class F>
  void parallel_for_stealing(size_t n, size_t own, size_t steal, F&& fn, size_t grain = 1) {
    if (n == 0) return;
    grain = std::max<size_t>(1, grain);
    if (n_threads_ == 1 || n >= (size_t(1) << 32)) {
      parallel_for(n, fn, grain);
      return;
    }
    const size_t units = (n + grain - 1) / grain;
    const size_t nt = size_t(n_threads_);
    run_stealing(
        n, [&](int i) { return std::min(n, units * size_t(i) / nt * grain); }, own, steal,
        [&](int, size_t begin, size_t end) { fn(begin, end); }, grain);
  }

  // The same over [0, n) cut where the caller says: thread i's own range is
  // [cut(i), cut(i + 1)), cut(0) = 0, cut(size()) = n, ascending, multiples
  // of grain but the last. fn(thread, begin, end): the thread index is the
  // one run() gives, for per-thread scratch. n < 2^32.
  template <class Cut, class F>
  void run_stealing(size_t n, Cut&& cut, size_t own, size_t steal, F&& fn, size_t grain = 1) {
    if (n == 0) return;
    grain = std::max<size_t>(1, grain);
    own = std::max<size_t>(1, (own + grain - 1) / grain) * grain;
    steal = std::max<size_t>(1, (steal + grain - 1) / grain) * grain;
    const int nt = n_threads_;
    for (int i = 0; i < nt; ++i) {
      const size_t begin = i == 0 ? 0 : size_t(cut(i));
      const size_t end = i + 1 == nt ? n : size_t(cut(i + 1));
      ranges_[size_t(i)].bounds.store((uint64_t(begin) << 32) | uint64_t(end),
                                      std::memory_order_relaxed);
    }
    run([&](int ti, int n_threads) {
      size_t begin, end;
      while (take_range(ti, own, grain, /*front=*/true, begin, end)) fn(ti, begin, end);
      for (int k = 1; k < n_threads; ++k)
        while (take_range((ti + k) % n_threads, steal, grain, /*front=*/false, begin, end))
          fn(ti, begin, end);
    });
  }

 private:
  static constexpr size_t kChunksPerThread = 1;
  using Trampoline = void (*)(void*, uint32_t);

  template <class F>
  void for_each_chunk(uint32_t n_chunks, F&& fn) {
    using Fn = std::remove_reference_t<F>;
    dispatch(n_chunks, const_cast<void*>(static_cast<const void*>(&fn)),
             [](void* ctx, uint32_t chunk) { (*static_cast<Fn*>(ctx))(chunk); });
  }
  void dispatch(uint32_t n_chunks, void* ctx, Trampoline call);
  // Takes up to `count` indices from the front or the back of range i of
  // run_stealing into [begin, end); false once the range is empty.
  bool take_range(int i, size_t count, size_t grain, bool front, size_t& begin, size_t& end);
  // Claims and runs chunks of job `generation` until none are left.
  void work_on(uint32_t generation);
  void worker_loop();

  int n_threads_;
  std::vector<std::thread> workers_;
  void* job_ctx_ = nullptr;
  Trampoline job_call_ = nullptr;
  uint32_t generation_counter_ = 0;  // caller thread only
  // (generation << 32) | (n_chunks << 16) | next chunk: one CAS both checks
  // that the job is still current and claims a chunk of it.
  std::atomic<uint64_t> ticket_{0};
  std::atomic<uint32_t> chunks_done_{0};
  std::atomic<uint32_t> wake_{0};  // generation workers wait on
  std::atomic<bool> stop_{false};
  // run_stealing's ranges, one per thread: (front << 32) | back,
  // each on its own cache line.
  struct alignas(64) StealRange {
    std::atomic<uint64_t> bounds{0};
  };
  std::vector<StealRange> ranges_;
};

}  // namespace kvforge
