// Shared data generators and error measures for the storage-format tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/formats/row_codec.h"

namespace kvforge::testing {

inline std::vector<float> gaussian(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// x (one row, a multiple of the type's block) quantized to `type` and back,
// through row_codec's dispatch to the format's own functions.
inline std::vector<float> round_trip(GgmlType type, const std::vector<float>& x) {
  std::vector<uint8_t> q(row_bytes(type, x.size()));
  std::vector<float> y(x.size());
  quantize_row(type, x.data(), q.data(), int64_t(x.size()));
  dequantize_row(type, q.data(), y.data(), int64_t(x.size()));
  return y;
}

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// sqrt(mean((a-b)^2)) / sqrt(mean(a^2)): error relative to the signal.
inline double relative_rmse(const std::vector<float>& ref, const std::vector<float>& got) {
  double err = 0, sig = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    err += (double(ref[i]) - got[i]) * (double(ref[i]) - got[i]);
    sig += double(ref[i]) * ref[i];
  }
  return sig == 0 ? std::sqrt(err) : std::sqrt(err / sig);
}

// Awkward inputs every quantizer must survive, each `n` long (a multiple of 256).
struct NamedData {
  const char* name;
  std::vector<float> values;
};

inline std::vector<NamedData> awkward_inputs(size_t n) {
  std::vector<NamedData> out;
  out.push_back({"zeros", std::vector<float>(n, 0.0f)});
  out.push_back({"constant positive", std::vector<float>(n, 0.37f)});
  out.push_back({"constant negative", std::vector<float>(n, -2.5f)});
  std::vector<float> outlier = gaussian(n, 7, 0.01f);
  outlier[n / 3] = 50.0f;
  out.push_back({"single outlier", outlier});
  out.push_back({"tiny (1e-3)", gaussian(n, 8, 1e-3f)});
  out.push_back({"below half range (1e-9)", gaussian(n, 9, 1e-9f)});
  std::vector<float> mixed = gaussian(n, 10, 1.0f);
  for (size_t i = 0; i < n; i += 64) mixed[i] = 0.0f;                 // sprinkle exact zeros
  for (size_t i = 0; i < n / 2; ++i) mixed[i] = std::fabs(mixed[i]);  // one-sided half
  out.push_back({"one-sided then mixed", mixed});
  return out;
}

}  // namespace kvforge::testing
