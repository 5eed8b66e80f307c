// The parse tree of a GBNF text (llama.cpp's grammar format), before
// lowering to the flat byte-level Grammar (grammar_lowering.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kvforge {

struct GbnfAlternatives;

struct GbnfItem {
  enum class Kind { Literal, CharClass, AnyChar, RuleRef, Group, Token };
  Kind kind = Kind::Literal;
  // Literal: UTF-8 bytes; RuleRef: the name; Token: "<[id]>" or "<text>"
  std::string text;
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // CharClass: code point ranges, inclusive
  bool negated = false;                               // CharClass: [^...]; Token: !<...>
  std::shared_ptr<GbnfAlternatives> group;            // Group: ( ... )
  uint32_t min = 1;
  int64_t max = 1;  // -1: unbounded
};

using GbnfSequence = std::vector<GbnfItem>;

struct GbnfAlternatives {
  std::vector<GbnfSequence> alternatives;
};

struct GbnfRule {
  std::string name;
  GbnfAlternatives body;
  int line = 0;  // 1-based, of the rule's name
};

}  // namespace kvforge
