#include "engine/sampling/grammar/repetition_shifts.h"

#include <optional>

namespace kvforge {
namespace {

// Rules that may derive no byte. Token elements take no byte either (and a
// byte walk cannot pass them), so they count as empty here. A worklist, so
// long chains of rules cost linear time.
std::vector<bool> nullable_rules(const Grammar& g) {
  struct Alt {
    uint32_t rule;
    uint32_t pending;  // rule references not yet known nullable
  };
  std::vector<Alt> alts;
  std::vector<std::vector<uint32_t>> users(g.rules());  // (rule) -> alts, once per reference
  std::vector<bool> nullable(g.rules(), false);
  std::vector<uint32_t> work;
  for (uint32_t r = 0; r < g.rules(); ++r) {
    for (uint32_t start : g.alternatives[r]) {
      Alt a{r, 0};
      bool bytes = false;
      for (uint32_t p = start; g.elements[p].kind != ElementKind::End; ++p) {
        const Element& e = g.elements[p];
        bytes |= e.kind == ElementKind::Bytes;
        if (e.kind == ElementKind::Rule)
          users[e.value].push_back(uint32_t(alts.size())), ++a.pending;
      }
      if (bytes) a.pending = UINT32_MAX;  // never empty
      if (a.pending == 0 && !nullable[r]) nullable[r] = true, work.push_back(r);
      alts.push_back(a);
    }
  }
  while (!work.empty()) {
    const uint32_t r = work.back();
    work.pop_back();
    for (uint32_t i : users[r]) {
      Alt& a = alts[i];
      if (a.pending == UINT32_MAX || --a.pending != 0 || nullable[a.rule]) continue;
      nullable[a.rule] = true;
      work.push_back(a.rule);
    }
  }
  return nullable;
}

// A chain link: a rule of two alternatives, "" and `u` or `u next`.
struct Link {
  Element u;
  uint32_t u_pos = 0;    // where u is
  int64_t next = -1;     // the rule `next`, -1 for `u` alone
  uint32_t ref_pos = 0;  // where `next` is referred to
};

std::optional<Link> link_of(const Grammar& g, uint32_t rule) {
  const auto& alts = g.alternatives[rule];
  if (alts.size() != 2) return std::nullopt;
  const bool first_empty = g.elements[alts[0]].kind == ElementKind::End;
  if (!first_empty && g.elements[alts[1]].kind != ElementKind::End) return std::nullopt;
  const uint32_t b = first_empty ? alts[1] : alts[0];
  const Element& u = g.elements[b];
  if (u.kind != ElementKind::Bytes && u.kind != ElementKind::Rule) return std::nullopt;
  if (g.elements[b + 1].kind == ElementKind::End) return Link{u, b};
  if (g.elements[b + 1].kind != ElementKind::Rule || g.elements[b + 2].kind != ElementKind::End)
    return std::nullopt;
  return Link{u, b, g.elements[b + 1].value, b + 1};
}

bool same(const Element& a, const Element& b) { return a.kind == b.kind && a.value == b.value; }

}  // namespace

std::vector<RepetitionShift> repetition_shifts(const Grammar& g) {
  const std::vector<bool> nullable = nullable_rules(g);
  std::vector<std::optional<Link>> links(g.rules());
  for (uint32_t r = 0; r < g.rules(); ++r) {
    links[r] = link_of(g, r);
    if (links[r] && links[r]->u.kind == ElementKind::Rule && nullable[links[r]->u.value])
      links[r].reset();  // a u that may take no byte breaks the count of bytes
  }
  // len[r]: r allows at most len[r] u (0: not a chain). Followed down each
  // chain once, so a chain of n links costs O(n) in all.
  std::vector<uint32_t> len(g.rules(), 0);
  std::vector<bool> done(g.rules(), false);
  std::vector<uint32_t> path;
  for (uint32_t r = 0; r < g.rules(); ++r) {
    path.clear();
    uint32_t at = r;
    while (!done[at] && links[at] && links[at]->next >= 0) {
      path.push_back(at);
      done[at] = true;  // a cycle of links stops here, its len left 0
      at = uint32_t(links[at]->next);
    }
    if (!done[at] && links[at]) len[at] = 1;  // `u` alone
    done[at] = true;
    for (size_t i = path.size(); i-- > 0;) {
      const uint32_t p = path[i], n = uint32_t(links[p]->next);
      if (len[n] != 0 && same(links[n]->u, links[p]->u)) len[p] = len[n] + 1;
    }
  }
  // up = r_{j+1} refers to r = r_j. A stack rests at r_j's reference to
  // r_{j-1} (resuming after a rule u) or, for a byte-set u, at u itself.
  std::vector<RepetitionShift> out(g.elements.size());
  for (uint32_t up = 0; up < g.rules(); ++up) {
    if (len[up] < 2) continue;
    const auto r = uint32_t(links[up]->next);
    if (len[up] != len[r] + 1) continue;
    if (links[r]->u.kind == ElementKind::Bytes) out[links[r]->u_pos] = {links[up]->u_pos, len[r]};
    if (len[r] >= 2) out[links[r]->ref_pos] = {links[up]->ref_pos, len[r]};
  }
  return out;
}

}  // namespace kvforge
