// What a scheduler step asks to compute, as plain values a test can compare:
// each chunk's sequence, first position and token count.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "engine/scheduler.h"

namespace kvforge::testing {

struct Chunk {
  SeqId seq;
  int32_t start, n;
  bool operator==(const Chunk&) const = default;
};

inline std::ostream& operator<<(std::ostream& os, const Chunk& c) {
  return os << "{seq " << c.seq << " [" << c.start << "+" << c.n << "]}";
}

inline std::vector<Chunk> chunks_of(const SchedulerOutput& out) {
  std::vector<Chunk> v;
  for (const auto& c : out.chunks) v.push_back({c.seq->id, c.start, c.n});
  return v;
}

}  // namespace kvforge::testing
