// Which rules are light: those whose reachable sub-grammar (the rule and the
// rules it refers to, transitively) spells a short state key
// (stack_prefix_masks.h). A stack's cut stops above a node of a heavy rule
// (a long object rule, say): the cut of a string's first character then
// holds the string's own rules alone, so its prefix mask is one for every
// place that holds such a string, instead of one walk per place.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/sampling/grammar/grammar.h"

namespace kvforge {

class LightRules {
 public:
  // max_bytes: the largest key (about 33 bytes per byte set, 4 per other
  // element) a light rule's sub-grammar may spell.
  LightRules(const Grammar& g, size_t max_bytes);

  // Whether the rule holding element `pos` is light; computed on first use.
  bool at(uint32_t pos);

 private:
  bool weigh(uint32_t rule);

  const Grammar& g_;
  size_t max_bytes_;
  std::vector<uint32_t> rule_of_;  // (element) -> its rule
  std::vector<int8_t> light_;      // (rule) -> 1 light, 0 heavy, -1 not yet known
  std::vector<uint32_t> seen_;     // (rule) -> the walk that last met it
  uint32_t walk_ = 0;
  std::vector<uint32_t> work_;
};

}  // namespace kvforge
