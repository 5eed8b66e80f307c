// SIMD levels in tests: which ones this machine has, and restoring the level a
// test changed (core/cpu_features.h: set_simd_level is process-wide).
#pragma once

#include <vector>

#include "core/cpu_features.h"

namespace kvforge::testing {

// Every level this machine can run, lowest first.
inline std::vector<SimdLevel> available_simd_levels() {
  const SimdLevel saved = simd_level();
  std::vector<SimdLevel> levels;
  for (SimdLevel l : {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512}) {
    set_simd_level(l);
    if (simd_level() == l) levels.push_back(l);
  }
  set_simd_level(saved);
  return levels;
}

// Restores the SIMD level when a test ends, however it ends.
struct SimdLevelGuard {
  SimdLevel saved = simd_level();
  ~SimdLevelGuard() { set_simd_level(saved); }
};

}  // namespace kvforge::testing
