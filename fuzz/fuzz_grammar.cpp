// Fuzz target for the grammar engine: the GBNF parser and the JSON-schema
// compiler, then the matcher. The first byte picks the input's kind (even:
// GBNF, odd: JSON schema); the rest is the text. It must be refused with
// GrammarError, or compile and then yield masks and advance for a few steps
// over a byte vocabulary (refusing only with GrammarError past a budget). A
// crash, a sanitizer report, another exception or a hang is a bug.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "app/structured/json_schema_gbnf.h"
#include "engine/sampling/grammar/grammar_compiler.h"
#include "engine/sampling/grammar/grammar_error.h"
#include "engine/sampling/grammar/grammar_matcher.h"

namespace {

std::shared_ptr<const kvforge::GrammarVocabulary> byte_vocab() {
  std::vector<std::string> bytes{""};
  for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, char(b)));
  bytes.push_back("{\"");
  bytes.push_back("\":");
  bytes.push_back("abc");
  bytes.push_back("");  // <|call|>: a control token that token references name
  std::unordered_map<std::string, int32_t> named{{"<|call|>", int32_t(bytes.size()) - 1}};
  return std::make_shared<kvforge::GrammarVocabulary>(std::move(bytes), std::vector<int32_t>{0},
                                                      std::move(named));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const auto vocab = byte_vocab();
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  kvforge::GrammarLimits limits;
  limits.max_rules = 5000;
  limits.max_elements = 50000;
  limits.text.max_repeat = 100;
  kvforge::ConstraintLimits runtime;
  runtime.max_stacks = 20000;
  runtime.max_expansion = 2000;
  try {
    const std::string gbnf =
        data[0] % 2 == 0 ? std::string(text) : kvforge::json_schema_to_gbnf(text);
    auto c = std::make_shared<kvforge::GrammarConstraint>(kvforge::compile_gbnf(gbnf, limits),
                                                          vocab, runtime);
    kvforge::GrammarMatcher m(c);
    for (int step = 0; step < 8 && !m.is_ended(); ++step) {
      const kvforge::TokenMask& mask = m.allowed();
      int32_t pick = -1;
      for (int32_t t = int32_t(vocab->n_vocab()) - 1; t >= 0 && pick < 0; --t)
        if (kvforge::mask_test(mask, t)) pick = t;
      if (pick < 0) break;
      m.accept(pick);
    }
  } catch (const kvforge::GrammarError&) {
  }
  return 0;
}
