// GCC 12 reports a false -Wrestrict in std::string's operator+ ("lit" + str),
// which grammar text is built from throughout this file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include "app/structured/gemma4_call_gbnf.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "app/chat/gemma4_arguments.h"
#include "app/chat/reasoning_reader.h"
#include "app/structured/json_primitives_gbnf.h"

namespace kvforge {
namespace {

// Nesting of objects and arrays in arguments: as deep as json_primitives_gbnf's any value.
constexpr int kGemma4ValueDepth = 3;

std::string value_rules() {
  std::string out = "g4-string ::= " + gbnf_literal(Gemma4Arguments::kQuote) + " g4-string-text " +
                    gbnf_literal(Gemma4Arguments::kQuote) + "\n" +
                    "g4-string-text ::= " + text_without_gbnf(Gemma4Arguments::kQuote) + "\n" +
                    "g4-key ::= [^:{},<\\x22\\x5B\\x5D\\x00-\\x20]+\n"
                    // Exponents of two digits at most: every number fits a double.
                    "g4-number ::= \"-\"? (\"0\" | [1-9] [0-9]{0,15}) (\".\" [0-9]{1,16})? "
                    "([eE] [-+]? [0-9]{1,2})?\n"
                    "g4-value-0 ::= g4-string | g4-number | \"true\" | \"false\" | \"null\"\n";
  for (int d = 1; d <= kGemma4ValueDepth; ++d) {
    const std::string in = "g4-value-" + std::to_string(d - 1), s = std::to_string(d);
    const std::string member = "g4-key \":\" " + in;
    out += "g4-object-" + s + " ::= \"{\" (" + member + " (\",\" " + member + ")*)? \"}\"\n";
    out += "g4-array-" + s + " ::= \"[\" (" + in + " (\",\" " + in + ")*)? \"]\"\n";
    out += "g4-value-" + s + " ::= g4-object-" + s + " | g4-array-" + s + " | " + in + "\n";
  }
  return out + "g4-args ::= g4-object-" + std::to_string(kGemma4ValueDepth) + "\n";
}

}  // namespace

// With t = terminator and n its length, a text without t is read by how much
// of t it has just seen: t[0] never recurs, so a mismatch after "t[0] t[1..j]"
// restarts at 0, or at 1 when the mismatching byte is t[0] itself. So the
// text is plain bytes and "t[0] t[1..j] x" pieces (x neither t[j+1] nor t[0]),
// where a piece may also end before x when the next piece starts (a t[0]),
// and the text may end inside a piece.
std::string text_without_gbnf(std::string_view t) {
  if (t.size() < 2 || t.substr(1).find(t[0]) != std::string_view::npos)
    throw std::invalid_argument("text_without_gbnf: '" + std::string(t) +
                                "' is shorter than 2 bytes or repeats its first byte");
  const size_t n = t.size();
  std::string partial = "\"\"", mismatch = gbnf_class_except(std::string{t[n - 1], t[0]});
  for (size_t j = n - 2; j >= 1; --j) {
    const std::string byte = gbnf_literal(std::string(1, t[j]));
    if (j < n - 2) partial = "(\"\" | " + byte + " " + partial + ")";
    if (j == n - 2) partial = "(\"\" | " + byte + ")";
    mismatch = gbnf_class_except(std::string{t[j], t[0]}) + " | " + byte + " (" + mismatch + ")";
  }
  const std::string start = gbnf_literal(std::string(1, t[0]));
  const std::string piece = start + " " + partial;
  return "(" + gbnf_class_except(t.substr(0, 1)) + " | (" + piece + ")* " + start + " (" +
         mismatch + "))* (" + piece + ")*";
}

std::string gemma4_arguments_rule_gbnf(const nlohmann::ordered_json& parameters,
                                       const std::string& name) {
  const auto props = parameters.find("properties");
  std::string keys;
  if (props != parameters.end() && props->is_object())
    for (const auto& [key, schema] : props->items()) {
      // What Gemma4Arguments reads as a key (and the g4-key class allows).
      const bool bare = !key.empty() && std::none_of(key.begin(), key.end(), [](char c) {
        return static_cast<unsigned char>(c) <= ' ' || std::strchr(":{}[],<\"", c) != nullptr;
      });
      if (!bare) return name + " ::= g4-args\n";
      keys += (keys.empty() ? "" : " | ") + gbnf_literal(key);
    }
  if (keys.empty()) return name + " ::= g4-args\n";
  const std::string member =
      "(" + keys + ") \":\" g4-value-" + std::to_string(kGemma4ValueDepth - 1);
  return name + " ::= \"{\" (" + member + " (\",\" " + member + ")*)? \"}\"\n";
}

std::string gemma4_call_rules_gbnf() {
  return value_rules() + "g4-thought ::= " + gbnf_literal(kGemma4Thought.open) +
         " g4-thought-text " + gbnf_literal(kGemma4Thought.close) + "\n" +
         "g4-thought-text ::= " + text_without_gbnf(kGemma4Thought.close) + "\n";
}

}  // namespace kvforge
