#include "core/threadpool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace kvforge {
namespace {

TEST(ThreadPoolTest, ParallelForVisitsEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{64}, size_t{1000}, size_t{4099}}) {
      for (size_t grain : {size_t{1}, size_t{3}, size_t{32}}) {
        std::vector<std::atomic<int>> hits(n);
        pool.parallel_for(
            n,
            [&](size_t b, size_t e) {
              ASSERT_LT(b, e);
              if (e < n) {
                ASSERT_EQ(e % grain, 0u) << "range end not a multiple of the grain";
              }
              for (size_t i = b; i < e; ++i) hits[i].fetch_add(1);
            },
            grain);
        for (size_t i = 0; i < n; ++i)
          ASSERT_EQ(hits[i].load(), 1) << "index " << i << " n " << n << " threads " << threads;
      }
    }
  }
}

TEST(ThreadPoolTest, RunCallsEachIndexOnceAndNeverConcurrently) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> in_use(3), calls(3);
  for (int round = 0; round < 2000; ++round) {
    pool.run([&](int i, int n) {
      ASSERT_EQ(n, 3);
      ASSERT_EQ(in_use[size_t(i)].fetch_add(1), 0) << "index " << i << " ran twice at once";
      calls[size_t(i)].fetch_add(1);
      in_use[size_t(i)].fetch_sub(1);
    });
  }
  for (auto& c : calls) EXPECT_EQ(c.load(), 2000);
}

// Many short regions back to back: a worker that wakes late must never run a
// chunk of a later job with an earlier job's bounds (sums would be wrong).
TEST(ThreadPoolTest, BackToBackRegionsStayConsistent) {
  ThreadPool pool(4);
  for (int round = 0; round < 5000; ++round) {
    const size_t n = size_t(1 + round % 37);
    std::atomic<size_t> sum{0};
    pool.parallel_for(n, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) sum.fetch_add(i + 1);
    });
    ASSERT_EQ(sum.load(), n * (n + 1) / 2) << "round " << round;
  }
}

// Work stealing keeps parallel_for's contract: every index once, edges at
// multiples of the grain (but the last), pieces no longer than own or steal
// (a back piece of the last range by up to grain - 1 more) with two or more threads.
TEST(ThreadPoolTest, ParallelForStealingVisitsEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{64}, size_t{1000}, size_t{4099}}) {
      for (size_t grain : {size_t{1}, size_t{3}, size_t{32}}) {
        for (size_t own : {size_t{1}, size_t{96}, size_t{256}}) {
          const size_t steal = 2 * grain;
          std::vector<std::atomic<int>> hits(n);
          pool.parallel_for_stealing(
              n, own, steal,
              [&](size_t b, size_t e) {
                ASSERT_LT(b, e);
                ASSERT_EQ(b % grain, 0u) << "piece start not a multiple of the grain";
                if (e < n) {
                  ASSERT_EQ(e % grain, 0u) << "piece end not a multiple of the grain";
                }
                const size_t own_up = std::max(grain, (own + grain - 1) / grain * grain);
                if (threads > 1) {  // one thread: parallel_for's single range
                  ASSERT_LE(e - b, std::max(own_up, steal + grain - 1));
                }
                for (size_t i = b; i < e; ++i) hits[i].fetch_add(1);
              },
              grain);
          for (size_t i = 0; i < n; ++i)
            ASSERT_EQ(hits[i].load(), 1)
                << "index " << i << " n " << n << " threads " << threads << " grain " << grain;
        }
      }
    }
  }
}

// A thread held up in its first piece leaves the rest of its range to the
// others: they take it from the back, so the region ends long before the
// held thread could have done its whole range alone.
TEST(ThreadPoolTest, ParallelForStealingHandsASlowThreadsTailToTheOthers) {
  ThreadPool pool(2);
  constexpr size_t n = 64;
  std::mutex m;
  std::set<std::thread::id> ran_first_half;
  std::atomic<int> pieces_of_first_half{0};
  pool.parallel_for_stealing(n, 8, 8, [&](size_t b, size_t e) {
    if (b == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (e <= n / 2) {
      std::lock_guard<std::mutex> lock(m);
      ran_first_half.insert(std::this_thread::get_id());
      pieces_of_first_half.fetch_add(1);
    }
  });
  EXPECT_EQ(pieces_of_first_half.load(), 4);
  EXPECT_EQ(ran_first_half.size(), 2u) << "nobody took over the held thread's range";
}

// run_stealing with the caller's cut (uneven, one empty range): every index
// once, each call with a thread index that no other call holds at the time.
TEST(ThreadPoolTest, RunStealingWithAnUnevenCutVisitsEveryIndexOnce) {
  ThreadPool pool(3);
  constexpr size_t n = 500;
  const size_t cuts[] = {0, 10, 10, n};  // thread 1's own range is empty
  for (int round = 0; round < 200; ++round) {
    std::vector<std::atomic<int>> hits(n), in_use(3);
    pool.run_stealing(
        n, [&](int i) { return cuts[i]; }, 7, 3,
        [&](int ti, size_t b, size_t e) {
          ASSERT_GE(ti, 0);
          ASSERT_LT(ti, 3);
          ASSERT_EQ(in_use[size_t(ti)].fetch_add(1), 0) << "thread index " << ti << " twice";
          for (size_t i = b; i < e; ++i) hits[i].fetch_add(1);
          in_use[size_t(ti)].fetch_sub(1);
        });
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "index " << i;
  }
}

}  // namespace
}  // namespace kvforge
