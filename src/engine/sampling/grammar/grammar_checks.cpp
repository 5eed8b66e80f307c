#include "engine/sampling/grammar/grammar_checks.h"

#include <string>

#include "engine/sampling/grammar/grammar_error.h"

namespace kvforge {
namespace {

// The rules an alternative starting at `pos` may begin with: each rule
// reference until the first element that must consume a byte.
template <typename Visit>
void leading_rules(const Grammar& g, uint32_t pos, const std::vector<bool>& nullable, Visit visit) {
  for (;; ++pos) {
    const Element& e = g.elements[pos];
    if (e.kind != ElementKind::Rule) return;
    visit(e.value);
    if (!nullable[e.value]) return;
  }
}

}  // namespace

std::vector<bool> nullable_rules(const Grammar& g) {
  std::vector<bool> nullable(g.rules(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < g.rules(); ++r) {
      if (nullable[r]) continue;
      for (uint32_t pos : g.alternatives[r]) {
        while (g.elements[pos].kind == ElementKind::Rule && nullable[g.elements[pos].value]) ++pos;
        if (g.elements[pos].kind == ElementKind::End) {
          nullable[r] = true;
          changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

void check_left_recursion(const Grammar& g) {
  const std::vector<bool> nullable = nullable_rules(g);
  enum : uint8_t { kNew, kOnPath, kDone };
  std::vector<uint8_t> state(g.rules(), kNew);
  // Iterative depth-first search: (rule, next alternative index) frames.
  struct Frame {
    uint32_t rule;
    std::vector<uint32_t> next;
    size_t i = 0;
  };
  for (uint32_t start = 0; start < g.rules(); ++start) {
    if (state[start] != kNew) continue;
    std::vector<Frame> path;
    auto push = [&](uint32_t r) {
      Frame f{r, {}};
      for (uint32_t pos : g.alternatives[r])
        leading_rules(g, pos, nullable, [&](uint32_t callee) { f.next.push_back(callee); });
      state[r] = kOnPath;
      path.push_back(std::move(f));
    };
    push(start);
    while (!path.empty()) {
      Frame& f = path.back();
      if (f.i == f.next.size()) {
        state[f.rule] = kDone;
        path.pop_back();
        continue;
      }
      const uint32_t callee = f.next[f.i++];
      if (state[callee] == kOnPath) {
        std::string cycle;
        size_t k = 0;
        while (path[k].rule != callee) ++k;
        for (; k < path.size(); ++k) cycle += g.rule_names[path[k].rule] + " -> ";
        throw GrammarError(
            "grammar: left recursion (or a repetition of something that can be "
            "empty): " +
            cycle + g.rule_names[callee]);
      }
      if (state[callee] == kNew) push(callee);
    }
  }
}

}  // namespace kvforge
