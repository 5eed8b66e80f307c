// Run-time CPU feature detection: kernels compiled for AVX2 / AVX-512 are only
// called when the machine running the binary has them (the build machine may differ).
#pragma once

#include <string>

namespace kvforge {

enum class SimdLevel { Scalar = 0, Avx2 = 1, Avx512 = 2 };

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
};

const CpuFeatures& cpu_features();

// Highest level usable on this machine, capped by KVFORGE_SIMD=scalar|avx2|avx512
// read once at start-up (for tests and benchmarks comparing paths).
SimdLevel simd_level();
// Overrides the level (tests); clamped to what the machine supports.
void set_simd_level(SimdLevel level);
std::string simd_level_name(SimdLevel level);

}  // namespace kvforge
