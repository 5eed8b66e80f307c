// One pool of persistent worker threads for all parallel work (`-t` threads in
// total: the calling thread is worker 0, so there is no oversubscription).
// A parallel region costs one wake-up and one join; nothing is allocated per call.
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

  // Calls fn(thread_index, n_threads) once on each thread, the caller being
  // thread 0, and returns when every call has returned. Not reentrant.
  template <class F>
  void run(F&& fn) {
    using Fn = std::remove_reference_t<F>;
    dispatch(const_cast<void*>(static_cast<const void*>(&fn)),
             [](void* ctx, int i, int n) { (*static_cast<Fn*>(ctx))(i, n); });
  }

  // Splits [0, n) into one contiguous range per thread (ranges are multiples
  // of `grain` except the last) and calls fn(begin, end) for each non-empty one.
  template <class F>
  void parallel_for(size_t n, F&& fn, size_t grain = 1) {
    if (n == 0) return;
    const size_t n_chunks = (n + grain - 1) / grain;
    if (n_threads_ == 1 || n_chunks == 1) {
      fn(size_t{0}, n);
      return;
    }
    run([&](int i, int nt) {
      const size_t per = (n_chunks + nt - 1) / nt;
      const size_t begin = std::min(n, size_t(i) * per * grain);
      const size_t end = std::min(n, size_t(i + 1) * per * grain);
      if (begin < end) fn(begin, end);
    });
  }

 private:
  using Trampoline = void (*)(void*, int, int);
  void dispatch(void* ctx, Trampoline call);
  void worker_loop(int index);

  int n_threads_;
  std::vector<std::thread> workers_;
  void* job_ctx_ = nullptr;
  Trampoline job_call_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace kvforge
