#include "engine/lockstep/grammar_wire.h"

#include <stdexcept>
#include <string>

namespace kvforge {
namespace {

[[noreturn]] void bad_grammar(const std::string& why) {
  throw std::runtime_error("step message from rank 0: grammar " + why);
}

// A count of items that each take at least `item_bytes`: no larger than the
// bytes left could hold, so a corrupt count cannot make us allocate.
uint64_t get_count(ByteReader& r, uint64_t item_bytes, const char* what) {
  const auto n = r.get<uint64_t>(what);
  if (n > r.remaining() / item_bytes) bad_grammar(std::string(what) + " larger than the message");
  return n;
}

void check_indices(const Grammar& g) {
  const size_t rules = g.alternatives.size();
  if (g.root >= rules) bad_grammar("root " + std::to_string(g.root) + " is not a rule");
  if (g.rule_names.size() != rules) bad_grammar("names do not match its rules");
  for (const Element& e : g.elements) {
    const size_t limit = e.kind == ElementKind::Bytes  ? g.byte_sets.size()
                         : e.kind == ElementKind::Rule ? rules
                         : is_token_element(e.kind)    ? g.tokens.size()
                                                       : size_t(UINT32_MAX) + 1;
    if (e.kind > ElementKind::NotToken) bad_grammar("element kind " + std::to_string(int(e.kind)));
    if (e.value >= limit) bad_grammar("element points past its table");
  }
  for (const std::vector<uint32_t>& alts : g.alternatives)
    for (uint32_t pos : alts)
      if (pos >= g.elements.size()) bad_grammar("alternative starts past the elements");
  if (!g.elements.empty() && g.elements.back().kind != ElementKind::End)
    bad_grammar("elements do not end with an End");
}

}  // namespace

void put_grammar(ByteWriter& w, const Grammar& g) {
  w.put(g.root);
  w.put(uint64_t(g.elements.size()));
  for (const Element& e : g.elements) {
    w.put(uint8_t(e.kind));
    w.put(e.value);
  }
  w.put(uint64_t(g.byte_sets.size()));
  for (const ByteSet& s : g.byte_sets) w.bytes(s.bits.data(), sizeof s.bits);
  w.put(uint64_t(g.alternatives.size()));
  for (const std::vector<uint32_t>& alts : g.alternatives)
    w.sized_bytes(alts.data(), alts.size() * sizeof(uint32_t));
  w.put(uint64_t(g.rule_names.size()));
  for (const std::string& name : g.rule_names) w.sized_bytes(name.data(), name.size());
  w.put(uint64_t(g.tokens.size()));
  for (const std::string& ref : g.tokens) w.sized_bytes(ref.data(), ref.size());
}

Grammar get_grammar(ByteReader& r) {
  Grammar g;
  g.root = r.get<uint32_t>("grammar root");
  g.elements.resize(get_count(r, 5, "grammar element count"));
  for (Element& e : g.elements) {
    e.kind = ElementKind(r.get<uint8_t>("grammar element kind"));
    e.value = r.get<uint32_t>("grammar element value");
  }
  g.byte_sets.resize(get_count(r, sizeof(ByteSet::bits), "grammar byte set count"));
  for (ByteSet& s : g.byte_sets)
    for (uint64_t& word : s.bits) word = r.get<uint64_t>("grammar byte set");
  g.alternatives.resize(get_count(r, 8, "grammar rule count"));
  for (std::vector<uint32_t>& alts : g.alternatives) {
    const std::span<const uint8_t> b = r.sized_bytes("grammar alternatives");
    if (b.size() % sizeof(uint32_t) != 0) bad_grammar("alternatives not whole positions");
    alts.resize(b.size() / sizeof(uint32_t));
    if (!b.empty()) std::memcpy(alts.data(), b.data(), b.size());
  }
  g.rule_names.resize(get_count(r, 8, "grammar rule name count"));
  for (std::string& name : g.rule_names) {
    const std::span<const uint8_t> b = r.sized_bytes("grammar rule name");
    name.assign(reinterpret_cast<const char*>(b.data()), b.size());
  }
  g.tokens.resize(get_count(r, 8, "grammar token reference count"));
  for (std::string& ref : g.tokens) {
    const std::span<const uint8_t> b = r.sized_bytes("grammar token reference");
    ref.assign(reinterpret_cast<const char*>(b.data()), b.size());
  }
  g.token_ids.assign(g.tokens.size(), -1);
  check_indices(g);
  return g;
}

Grammar source_rules(const GrammarConstraint& c) {
  Grammar g = c.grammar();
  const size_t n = g.elements.size();
  const bool sentinel = n >= 2 && !g.byte_sets.empty() && g.byte_sets.back() == ByteSet{} &&
                        g.elements[n - 2].kind == ElementKind::Bytes &&
                        g.elements[n - 2].value == g.byte_sets.size() - 1 &&
                        g.elements[n - 1].kind == ElementKind::End;
  if (!sentinel) throw std::logic_error("grammar constraint: its sentinel is not where expected");
  g.elements.resize(n - 2);
  g.byte_sets.pop_back();
  return g;
}

bool same_rules(const Grammar& a, const Grammar& b) {
  if (a.root != b.root || a.elements.size() != b.elements.size() || a.byte_sets != b.byte_sets ||
      a.alternatives != b.alternatives || a.rule_names != b.rule_names || a.tokens != b.tokens)
    return false;
  for (size_t i = 0; i < a.elements.size(); ++i)
    if (a.elements[i].kind != b.elements[i].kind || a.elements[i].value != b.elements[i].value)
      return false;
  return true;
}

}  // namespace kvforge
