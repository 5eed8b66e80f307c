#include "core/threadpool.h"

#include <gtest/gtest.h>

#include <atomic>
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

}  // namespace
}  // namespace kvforge
