// The output-constraint flags of run, chat and batch (SamplingFlags in
// cli_common.h): a GBNF grammar or a JSON schema, inline or from a file.
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "app/cli/cli_common.h"
#include "app/structured/constraint_cache.h"
#include "engine/sampling/grammar/grammar_compiler.h"
#include "engine/sampling/grammar/grammar_error.h"

namespace kvforge::cli {
namespace {

std::string read_file(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(std::string(flag) + ": cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// TEXT, or the contents of FILE for @FILE.
std::string text_or_file(const std::string& value, const char* flag) {
  return !value.empty() && value[0] == '@' ? read_file(value.substr(1), flag) : value;
}

}  // namespace

void SamplingFlags::add_grammar_flags(CLI::App& app) {
  app.add_option("--grammar", grammar, "GBNF grammar the output must follow (TEXT or @FILE)");
  app.add_option("--grammar-file", grammar_file, "GBNF grammar file (llama.cpp's flag)");
  app.add_option("-j,--json-schema", json_schema,
                 "JSON schema the output must follow (TEXT or @FILE)");
}

std::optional<ConstraintSpec> SamplingFlags::constraint() const {
  const int given = !grammar.empty() + !grammar_file.empty() + !json_schema.empty();
  if (given > 1)
    throw std::invalid_argument("--grammar, --grammar-file and --json-schema: give at most one");
  if (!grammar.empty())
    return ConstraintSpec{ConstraintSpec::Kind::Gbnf, text_or_file(grammar, "--grammar"),
                          "--grammar"};
  if (!grammar_file.empty())
    return ConstraintSpec{ConstraintSpec::Kind::Gbnf, read_file(grammar_file, "--grammar-file"),
                          "--grammar-file"};
  if (!json_schema.empty())
    return ConstraintSpec{ConstraintSpec::Kind::JsonSchema,
                          text_or_file(json_schema, "--json-schema"), "--json-schema"};
  return std::nullopt;
}

void SamplingFlags::check_grammar() const {
  const auto spec = constraint();
  if (!spec) return;
  try {
    (void)compile_gbnf(constraint_gbnf(*spec));
  } catch (const GrammarError& e) {
    throw std::invalid_argument(spec->source + ": " + e.what());
  }
}

void SamplingFlags::bind_grammar(SamplingParams& out, const Tokenizer& tokenizer) const {
  const auto spec = constraint();
  if (!spec) return;
  try {
    ConstraintCache cache(tokenizer, 1);
    out.grammar = cache.get(*spec);
  } catch (const GrammarError& e) {
    throw std::invalid_argument(e.what());
  }
}

}  // namespace kvforge::cli
