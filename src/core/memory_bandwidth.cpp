#include "core/memory_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cpu_features.h"

namespace kvforge {

// memory_bandwidth_avx512.cpp; only called when simd_level() allows it.
uint64_t memory_read_sum_avx512(const void* data, size_t bytes);

namespace {

// Eight independent accumulators keep enough loads in flight; the compiler
// vectorizes this with the baseline ISA.
uint64_t memory_read_sum_portable(const void* data, size_t bytes) {
  const auto* words = static_cast<const uint64_t*>(data);
  const size_t n = bytes / 8;
  uint64_t acc[8] = {};
  for (size_t i = 0; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += words[i + size_t(k)];
  uint64_t s = 0;
  for (uint64_t a : acc) s += a;
  return s;
}

constexpr size_t kChunkBytes = size_t(64) << 10;  // grain of the parallel fill

}  // namespace

uint64_t memory_read_sum(const void* data, size_t bytes) {
  if (simd_level() == SimdLevel::Avx512) return memory_read_sum_avx512(data, bytes);
  return memory_read_sum_portable(data, bytes);
}

ReadBandwidthProbe::ReadBandwidthProbe(ThreadPool& pool, size_t buffer_bytes)
    : pool_(pool), bytes_((buffer_bytes + 63) & ~size_t(63)) {
  if (buffer_bytes == 0)
    throw std::invalid_argument("ReadBandwidthProbe: the buffer must not be empty");
  buffer_ = static_cast<uint8_t*>(::operator new[](bytes_, std::align_val_t(64)));
  // Written by the pool so pages land where the readers run; also faults them in.
  pool_.parallel_for(
      bytes_, [&](size_t b, size_t e) { std::memset(buffer_ + b, 1, e - b); }, kChunkBytes);
  per_thread_.assign(size_t(pool_.size()), 0);
}

ReadBandwidthProbe::~ReadBandwidthProbe() { ::operator delete[](buffer_, std::align_val_t(64)); }

double ReadBandwidthProbe::pass() {
  const auto t0 = std::chrono::steady_clock::now();
  // One contiguous range per thread (whole lines), read as the level's read
  // loop reads it (at AVX-512: eight streams, memory_bandwidth_avx512.cpp).
  pool_.run([&](int t, int nt) {
    const size_t lines = bytes_ / 64;
    const size_t b = lines * size_t(t) / size_t(nt) * 64,
                 e = lines * size_t(t + 1) / size_t(nt) * 64;
    per_thread_[size_t(t)] = memory_read_sum(buffer_ + b, e - b);
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Every byte is 1, so every word is 0x0101...; checking the sum keeps the
  // reads from being optimized away and catches a probe that skipped memory.
  uint64_t total = 0;
  for (uint64_t v : per_thread_) total += v;
  if (total != uint64_t(bytes_ / 8) * 0x0101010101010101ull)
    throw std::logic_error("ReadBandwidthProbe: read sum mismatch");
  return double(bytes_) / s;
}

ReadBandwidth measure_read_bandwidth(ThreadPool& pool, size_t buffer_bytes, int passes) {
  if (passes < 1 || buffer_bytes == 0)
    throw std::invalid_argument("measure_read_bandwidth: need passes >= 1 (got " +
                                std::to_string(passes) + ") and a non-empty buffer");
  ReadBandwidthProbe probe(pool, buffer_bytes);
  ReadBandwidth r;
  r.buffer_bytes = probe.bytes();
  r.passes = passes;
  double total_seconds = 0;
  for (int p = 0; p < passes; ++p) {
    const double rate = probe.pass();
    total_seconds += double(probe.bytes()) / rate;
    r.best_bytes_per_second = std::max(r.best_bytes_per_second, rate);
  }
  r.mean_bytes_per_second = double(probe.bytes()) * passes / total_seconds;
  return r;
}

}  // namespace kvforge
