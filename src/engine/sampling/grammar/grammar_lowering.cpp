#include "engine/sampling/grammar/grammar_lowering.h"

#include <map>
#include <string>
#include <unordered_map>

#include "engine/sampling/grammar/grammar_error.h"
#include "engine/sampling/grammar/utf8_ranges.h"

namespace kvforge {
namespace {

using Alternative = std::vector<Element>;
using Body = std::vector<Alternative>;

class Lowering {
 public:
  explicit Lowering(const GrammarLimits& limits) : limits_(limits) {}

  Grammar run(const std::vector<GbnfRule>& rules) {
    for (const GbnfRule& r : rules) {
      const uint32_t id = rule_id(r.name);
      defined_[id] = true;
      bodies_[id] = lower_alternatives(r.body, r.name);
    }
    for (uint32_t id = 0; id < bodies_.size(); ++id)
      if (!defined_[id]) throw GrammarError("gbnf: undefined rule '" + names_[id] + "'");
    const auto root = ids_.find("root");
    if (root == ids_.end()) throw GrammarError("gbnf: no rule named 'root'");
    return flatten(root->second);
  }

 private:
  uint32_t rule_id(const std::string& name) {
    const auto [it, added] = ids_.emplace(name, uint32_t(names_.size()));
    if (added) add_rule(name, false);
    return it->second;
  }

  uint32_t new_rule(const std::string& hint) {
    const uint32_t id = uint32_t(names_.size());
    add_rule(hint + "_" + std::to_string(id), true);
    return id;
  }

  void add_rule(std::string name, bool defined) {
    if (names_.size() >= limits_.max_rules)
      throw GrammarError("grammar: more than " + std::to_string(limits_.max_rules) +
                         " rules after expanding repetitions");
    names_.push_back(std::move(name));
    bodies_.emplace_back();
    defined_.push_back(defined);
  }

  void count(size_t n) {
    n_elements_ += n;
    if (n_elements_ > limits_.max_elements)
      throw GrammarError("grammar: more than " + std::to_string(limits_.max_elements) +
                         " elements after expanding repetitions");
  }

  Body lower_alternatives(const GbnfAlternatives& alts, const std::string& hint) {
    Body body;
    for (const GbnfSequence& seq : alts.alternatives) {
      Alternative alt;
      for (const GbnfItem& item : seq) lower_item(item, hint, alt);
      count(alt.size() + 1);
      body.push_back(std::move(alt));
    }
    return body;
  }

  void lower_item(const GbnfItem& item, const std::string& hint, Alternative& out) {
    Alternative unit = lower_unit(item, hint);
    if (item.min == 1 && item.max == 1) {
      out.insert(out.end(), unit.begin(), unit.end());
      return;
    }
    if (unit.size() != 1) {
      const uint32_t wrap = new_rule(hint);
      count(unit.size() + 1);
      bodies_[wrap] = {unit};
      unit = {Element{ElementKind::Rule, wrap}};
    }
    count(item.min);
    out.insert(out.end(), item.min, unit[0]);
    if (item.max < 0) {
      const uint32_t star = new_rule(hint);
      count(4);
      bodies_[star] = {{unit[0], Element{ElementKind::Rule, star}}, {}};
      out.push_back({ElementKind::Rule, star});
      return;
    }
    uint32_t inner = 0;
    for (int64_t k = 0; k < item.max - int64_t(item.min); ++k) {
      const uint32_t opt = new_rule(hint);
      count(4);
      bodies_[opt] = {{unit[0]}, {}};
      if (k > 0) bodies_[opt][0].push_back({ElementKind::Rule, inner});
      inner = opt;
    }
    if (item.max > int64_t(item.min)) out.push_back({ElementKind::Rule, inner});
  }

  Alternative lower_unit(const GbnfItem& item, const std::string& hint) {
    switch (item.kind) {
      case GbnfItem::Kind::Literal: {
        Alternative alt;
        for (char c : item.text) alt.push_back(byte_element(uint8_t(c), uint8_t(c)));
        return alt;
      }
      case GbnfItem::Kind::CharClass:
        return {class_element(normalize_ranges(item.ranges, item.negated))};
      case GbnfItem::Kind::AnyChar:
        return {class_element({{0, kMaxCodePoint}})};
      case GbnfItem::Kind::RuleRef:
        return {Element{ElementKind::Rule, rule_id(item.text)}};
      case GbnfItem::Kind::Token: {
        const auto [it, added] = token_ids_.emplace(item.text, uint32_t(tokens_.size()));
        if (added) tokens_.push_back(item.text);
        return {Element{item.negated ? ElementKind::NotToken : ElementKind::Token, it->second}};
      }
      case GbnfItem::Kind::Group: {
        Body body = lower_alternatives(*item.group, hint);
        if (body.size() == 1) return body[0];
        const uint32_t id = new_rule(hint);
        bodies_[id] = std::move(body);
        return {Element{ElementKind::Rule, id}};
      }
    }
    return {};
  }

  uint32_t byte_set_id(const ByteSet& set) {
    const auto [it, added] = set_ids_.emplace(set.bits, uint32_t(byte_sets_.size()));
    if (added) byte_sets_.push_back(set);
    return it->second;
  }

  Element byte_element(uint8_t lo, uint8_t hi) {
    ByteSet set;
    set.set_range(lo, hi);
    return {ElementKind::Bytes, byte_set_id(set)};
  }

  // A class of only ASCII characters is one byte set; others a rule whose
  // alternatives are the UTF-8 byte-range sequences of the class.
  Element class_element(const std::vector<CodeRange>& ranges) {
    if (ranges.empty()) throw GrammarError("gbnf: a character class that matches nothing");
    if (ranges.back().second < 0x80) {
      ByteSet set;
      for (auto [lo, hi] : ranges) set.set_range(uint8_t(lo), uint8_t(hi));
      return {ElementKind::Bytes, byte_set_id(set)};
    }
    const auto cached = class_rules_.find(ranges);
    if (cached != class_rules_.end()) return {ElementKind::Rule, cached->second};
    const uint32_t id = new_rule("char");
    Body body;
    ByteSet ascii;
    bool has_ascii = false;
    for (const ByteRangeSeq& seq : utf8_sequences(ranges)) {
      if (seq.size() == 1) {
        ascii.set_range(seq[0].first, seq[0].second);
        has_ascii = true;
        continue;
      }
      Alternative alt;
      for (auto [lo, hi] : seq) alt.push_back(byte_element(lo, hi));
      body.push_back(std::move(alt));
    }
    if (has_ascii) body.insert(body.begin(), Alternative{{ElementKind::Bytes, byte_set_id(ascii)}});
    for (const Alternative& alt : body) count(alt.size() + 1);
    bodies_[id] = std::move(body);
    class_rules_.emplace(ranges, id);
    return {ElementKind::Rule, id};
  }

  Grammar flatten(uint32_t root) {
    Grammar g;
    g.byte_sets = std::move(byte_sets_);
    g.rule_names = std::move(names_);
    g.token_ids.assign(tokens_.size(), -1);
    g.tokens = std::move(tokens_);
    g.root = root;
    g.alternatives.resize(bodies_.size());
    for (size_t r = 0; r < bodies_.size(); ++r) {
      for (const Alternative& alt : bodies_[r]) {
        g.alternatives[r].push_back(uint32_t(g.elements.size()));
        g.elements.insert(g.elements.end(), alt.begin(), alt.end());
        g.elements.push_back({ElementKind::End, 0});
      }
    }
    return g;
  }

  const GrammarLimits& limits_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<std::string> names_;
  std::vector<Body> bodies_;
  std::vector<bool> defined_;
  std::vector<ByteSet> byte_sets_;
  std::map<std::array<uint64_t, 4>, uint32_t> set_ids_;
  std::map<std::vector<CodeRange>, uint32_t> class_rules_;
  std::vector<std::string> tokens_;  // token references as written, in the order met
  std::unordered_map<std::string, uint32_t> token_ids_;
  size_t n_elements_ = 0;
};

}  // namespace

Grammar lower_gbnf(const std::vector<GbnfRule>& rules, const GrammarLimits& limits) {
  return Lowering(limits).run(rules);
}

}  // namespace kvforge
