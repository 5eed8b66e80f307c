#include "engine/sampling/grammar/light_rules.h"

namespace kvforge {

LightRules::LightRules(const Grammar& g, size_t max_bytes)
    : g_(g),
      max_bytes_(max_bytes),
      rule_of_(g.elements.size(), UINT32_MAX),
      light_(g.rules(), -1),
      seen_(g.rules(), 0) {
  for (uint32_t r = 0; r < g.rules(); ++r)
    for (uint32_t start : g.alternatives[r])
      for (uint32_t p = start; p < g.elements.size(); ++p) {
        rule_of_[p] = r;
        if (g.elements[p].kind == ElementKind::End) break;
      }
}

bool LightRules::at(uint32_t pos) {
  if (pos >= rule_of_.size() || rule_of_[pos] == UINT32_MAX) return false;
  int8_t& known = light_[rule_of_[pos]];
  if (known < 0) known = weigh(rule_of_[pos]) ? 1 : 0;
  return known == 1;
}

// A walk of the rules reachable from `rule`, stopped as soon as their
// elements weigh more than max_bytes_: at most that many element reads.
bool LightRules::weigh(uint32_t rule) {
  ++walk_;
  size_t bytes = 0;
  work_.assign(1, rule);
  seen_[rule] = walk_;
  while (!work_.empty()) {
    const uint32_t r = work_.back();
    work_.pop_back();
    for (uint32_t start : g_.alternatives[r]) {
      for (uint32_t p = start;; ++p) {
        const Element& e = g_.elements[p];
        bytes += e.kind == ElementKind::Bytes ? 33 : 4;
        if (bytes > max_bytes_) return false;
        if (e.kind == ElementKind::End) break;
        if (e.kind == ElementKind::Rule && seen_[e.value] != walk_) {
          seen_[e.value] = walk_;
          work_.push_back(e.value);
        }
      }
    }
  }
  return true;
}

}  // namespace kvforge
