#include "engine/static_pipeline/plan.h"

#include <algorithm>

namespace kvforge {

std::string Plan::label() const {
  return std::string(kind == PlanKind::Prefill ? "prefill" : "generate") + "[" +
         std::to_string(rows) + " x " + std::to_string(kv_len) + "]";
}

uint64_t PlanSet::largest_arena_bytes() const {
  uint64_t n = prefill.arena_bytes;
  for (const Plan& p : generate) n = std::max(n, p.arena_bytes);
  return n;
}

uint64_t PlanSet::largest_matmul_scratch_bytes() const {
  uint64_t n = prefill.matmul_scratch_bytes;
  for (const Plan& p : generate) n = std::max(n, p.matmul_scratch_bytes);
  return n;
}

}  // namespace kvforge
