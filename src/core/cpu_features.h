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
  // AMX tiles with int8 dot products (CPUID and XCR0: the OS saves the tile
  // state). Linux also wants a per-process request before the first tile
  // instruction; amx_int8_usable() makes it.
  bool amx_int8 = false;
};

const CpuFeatures& cpu_features();

// Highest level usable on this machine, capped by KVFORGE_SIMD=scalar|avx2|avx512
// read once at start-up (for tests and benchmarks comparing paths).
SimdLevel simd_level();
// Overrides the level (tests); clamped to what the machine supports.
void set_simd_level(SimdLevel level);
std::string simd_level_name(SimdLevel level);

// Whether the AMX int8 kernels may run: the machine has AMX-TILE and
// AMX-INT8, the OS granted this process the tile state (asked for once, on
// the first call), the SIMD level is AVX-512 (their epilogue is AVX-512
// code), KVFORGE_AMX=0 was not set at start-up, and set_amx_enabled(false)
// was not called. AMX kernels give bitwise the results of the AVX-512 ones
// they stand in for (kernels/matmul.h), so this only changes speed.
bool amx_int8_usable();
// Switches the AMX kernels off or back on (tests comparing the two paths,
// benchmarks); on is still subject to the checks above.
void set_amx_enabled(bool enabled);

}  // namespace kvforge
