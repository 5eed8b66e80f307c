// Prometheus exposition text of the server's metrics registry.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>

#include "app/server/metrics.h"

namespace kvforge::server {
namespace {

TEST(MetricsRegistry, CountersAndGaugesWithLabels) {
  MetricsRegistry r;
  r.counter("kv_requests_total", "Requests by status.",
            {{"endpoint", "/v1/completions"}, {"status", "200"}})
      .inc();
  r.counter("kv_requests_total", "Requests by status.",
            {{"endpoint", "/v1/completions"}, {"status", "200"}})
      .inc(2);
  r.counter("kv_requests_total", "Requests by status.",
            {{"endpoint", "/v1/chat/completions"}, {"status", "400"}})
      .inc();
  r.gauge("kv_running", "Running sequences.").set(3.5);
  EXPECT_EQ(r.render(),
            "# HELP kv_requests_total Requests by status.\n"
            "# TYPE kv_requests_total counter\n"
            "kv_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 3\n"
            "kv_requests_total{endpoint=\"/v1/chat/completions\",status=\"400\"} 1\n"
            "# HELP kv_running Running sequences.\n"
            "# TYPE kv_running gauge\n"
            "kv_running 3.5\n");
}

TEST(MetricsRegistry, HistogramBucketsAreCumulativeAndInclusive) {
  MetricsRegistry r;
  Histogram& h = r.histogram("kv_ttft_seconds", "Time to first token.", {0.5, 1});
  h.observe(0.25);
  h.observe(0.5);  // on the bound: counts in le="0.5"
  h.observe(0.75);
  h.observe(7);
  EXPECT_EQ(r.render(),
            "# HELP kv_ttft_seconds Time to first token.\n"
            "# TYPE kv_ttft_seconds histogram\n"
            "kv_ttft_seconds_bucket{le=\"0.5\"} 2\n"
            "kv_ttft_seconds_bucket{le=\"1\"} 3\n"
            "kv_ttft_seconds_bucket{le=\"+Inf\"} 4\n"
            "kv_ttft_seconds_sum 8.5\n"
            "kv_ttft_seconds_count 4\n");
}

TEST(MetricsRegistry, EscapingAndSpecialValues) {
  MetricsRegistry r;
  r.gauge("g", "line1\nback\\slash", {{"path", "a\"b\\c\nd"}})
      .set(std::numeric_limits<double>::infinity());
  EXPECT_EQ(r.render(),
            "# HELP g line1\\nback\\\\slash\n"
            "# TYPE g gauge\n"
            "g{path=\"a\\\"b\\\\c\\nd\"} +Inf\n");
  EXPECT_EQ(format_metric_value(std::nan("")), "NaN");
  EXPECT_EQ(format_metric_value(0.1), "0.1");
  EXPECT_EQ(format_metric_value(1e21), "1e+21");
}

TEST(MetricsRegistry, RejectsBadNamesAndTypeClashes) {
  MetricsRegistry r;
  EXPECT_THROW(r.counter("9bad", "x"), std::invalid_argument);
  EXPECT_THROW(r.counter("ok", "x", {{"le", "1"}}), std::invalid_argument);
  EXPECT_THROW(r.counter("ok", "x", {{"bad-label", "1"}}), std::invalid_argument);
  r.counter("c", "x");
  EXPECT_THROW(r.gauge("c", "x"), std::invalid_argument);
  EXPECT_THROW(Histogram({1, 1}), std::invalid_argument);
}

TEST(MetricsRegistry, ConcurrentUpdatesAreNotLost) {
  MetricsRegistry r;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&r] {
      for (int i = 0; i < 10000; ++i) {
        r.counter("c_total", "x", {{"k", "v"}}).inc();
        r.histogram("h", "x", {0.5}).observe(i % 2 ? 1.0 : 0.0);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(r.counter("c_total", "x", {{"k", "v"}}).value(), 40000);
  const auto snap = r.histogram("h", "x", {0.5}).snapshot();
  EXPECT_EQ(snap.count, 40000u);
  EXPECT_EQ(snap.cumulative[0], 20000u);
  EXPECT_EQ(snap.sum, 20000);
}

}  // namespace
}  // namespace kvforge::server
