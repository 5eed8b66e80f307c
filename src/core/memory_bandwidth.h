// Measured memory read bandwidth: the ceiling of any bandwidth-bound kernel
// (decode reads every weight byte once per token), so benchmarks can report
// their speed as a fraction of what the machine can stream.
//
// The probe reads a large buffer with all the pool's threads, each one
// contiguous range as the matmul kernels split rows, with the widest loads
// the CPU has and, at AVX-512, as eight interleaved streams with software
// prefetch (the decode kernels read several row streams at once): a probe
// with one stream per core read less than decode itself did on some
// machines, and a roof below the kernels it bounds is no roof
// (docs/bench/design-measurements.md). The buffer is ordinary
// anonymous memory (4 KiB pages, like a memory-mapped model file), written
// once before timing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/threadpool.h"

namespace kvforge {

struct ReadBandwidth {
  double best_bytes_per_second = 0;  // fastest pass: the roof
  double mean_bytes_per_second = 0;
  size_t buffer_bytes = 0;
  int passes = 0;
};

inline constexpr size_t kDefaultBandwidthProbeBytes = size_t(256) << 20;

// A probe buffer kept for repeated passes, so that a benchmark can measure
// the bandwidth right beside each of its timed runs: on a machine shared with
// other tenants the bandwidth moves by 2x within minutes, and a fraction of
// the roofline is only meaningful against a probe taken under the same load.
class ReadBandwidthProbe {
 public:
  // Allocates and writes `buffer_bytes` (rounded up to 64 bytes) with the pool.
  explicit ReadBandwidthProbe(ThreadPool& pool, size_t buffer_bytes = kDefaultBandwidthProbeBytes);
  ~ReadBandwidthProbe();
  ReadBandwidthProbe(const ReadBandwidthProbe&) = delete;
  ReadBandwidthProbe& operator=(const ReadBandwidthProbe&) = delete;

  // One full read of the buffer with all the pool's threads: bytes per second.
  double pass();
  size_t bytes() const { return bytes_; }

 private:
  ThreadPool& pool_;
  size_t bytes_;
  uint8_t* buffer_ = nullptr;         // 64-byte aligned
  std::vector<uint64_t> per_thread_;  // read sums, one per thread
};

// Times `passes` full reads of a `buffer_bytes` buffer (rounded up to 64 bytes).
// Throws std::invalid_argument for passes < 1 or an empty buffer.
ReadBandwidth measure_read_bandwidth(ThreadPool& pool,
                                     size_t buffer_bytes = kDefaultBandwidthProbeBytes,
                                     int passes = 5);

// Sum of the 64-bit words of [data, data + bytes) (bytes a multiple of 64,
// data 64-byte aligned); what the probe computes, exposed for its test.
uint64_t memory_read_sum(const void* data, size_t bytes);

}  // namespace kvforge
