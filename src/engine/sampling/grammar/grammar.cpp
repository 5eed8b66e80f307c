#include "engine/sampling/grammar/grammar.h"

#include <cstdio>

namespace kvforge {
namespace {

void append_byte(std::string& out, int b) {
  if (b >= 0x21 && b < 0x7F && b != '\\' && b != ']' && b != '-' && b != '^') {
    out += char(b);
  } else {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02X", b);
    out += buf;
  }
}

std::string describe_set(const ByteSet& set) {
  std::string out = "[";
  for (int b = 0; b < 256;) {
    if (!set.test(uint8_t(b))) {
      ++b;
      continue;
    }
    int e = b;
    while (e + 1 < 256 && set.test(uint8_t(e + 1))) ++e;
    append_byte(out, b);
    if (e > b) {
      out += '-';
      append_byte(out, e);
    }
    b = e + 1;
  }
  return out + "]";
}

}  // namespace

std::string Grammar::describe() const {
  std::string out;
  for (size_t r = 0; r < rules(); ++r) {
    out += rule_names[r] + " ::=";
    for (size_t a = 0; a < alternatives[r].size(); ++a) {
      if (a > 0) out += " |";
      for (uint32_t pos = alternatives[r][a]; elements[pos].kind != ElementKind::End; ++pos) {
        const Element& e = elements[pos];
        out += ' ';
        if (e.kind == ElementKind::Rule)
          out += rule_names[e.value];
        else if (is_token_element(e.kind))
          out += (e.kind == ElementKind::NotToken ? "!" : "") + tokens[e.value];
        else
          out += describe_set(byte_sets[e.value]);
      }
      if (elements[alternatives[r][a]].kind == ElementKind::End) out += " \"\"";
    }
    out += '\n';
  }
  return out;
}

}  // namespace kvforge
