// Latency percentiles for benchmarks and batch summaries.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace kvforge {

// The q-quantile (q in [0, 1]) of `values` by linear interpolation between
// closest ranks; 0 for no values.
inline double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = q * double(values.size() - 1);
  const size_t lo = size_t(std::floor(rank));
  const size_t hi = std::min(values.size() - 1, lo + 1);
  return values[lo] + (rank - double(lo)) * (values[hi] - values[lo]);
}

}  // namespace kvforge
