// A small Prometheus registry: counters, gauges and histograms, optionally
// labelled, rendered in the text exposition format (version 0.0.4) for
// GET /metrics. Registration takes a lock once; updates are lock-free
// (counters, gauges) or take the metric's own short lock (histograms), so
// HTTP threads and the engine loop can update concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace kvforge::server {

using Labels = std::vector<std::pair<std::string, std::string>>;  // rendered in this order

class Counter {
 public:
  void inc(double v = 1.0) { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Histogram {
 public:
  // `bounds`: strictly increasing upper bounds; +Inf is implicit.
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // per bound, then +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot snapshot() const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative), last = above every bound
  double sum_ = 0;
  uint64_t count_ = 0;
};

// Latency buckets in seconds, 1 ms .. 60 s.
std::vector<double> latency_buckets();

class MetricsRegistry {
 public:
  // Returns the series for (name, labels), creating it on first use. The
  // reference stays valid for the registry's lifetime. Throws
  // std::invalid_argument for an invalid metric or label name, or a name
  // registered before with another type.
  Counter& counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& histogram(const std::string& name, const std::string& help,
                       const std::vector<double>& bounds, const Labels& labels = {});

  // The whole registry in Prometheus text format, families in registration order.
  std::string render() const;

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Series {
    Labels labels;
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
  };
  struct Family {
    std::string name, help;
    Type type;
    std::vector<std::unique_ptr<Series>> series;
  };
  Series& series(const std::string& name, const std::string& help, Type type, const Labels& labels);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family>> families_;
};

// Prometheus number formatting: shortest round trip, +Inf/-Inf/NaN.
std::string format_metric_value(double v);

}  // namespace kvforge::server
