// kvforge grammar check FILE: what a GBNF grammar or a JSON schema (a .json
// file, or --schema) compiles to, or the error naming the problem. With -m,
// the grammar is also bound to the model's vocabulary and its first token
// mask timed. kvforge grammar bench -m MODEL FILE...: grammar_bench.h.
#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/grammar_bench.h"
#include "app/cli/subcommand.h"
#include "app/structured/constraint_cache.h"
#include "core/gguf/gguf_file.h"
#include "engine/sampling/grammar/grammar_compiler.h"
#include "engine/sampling/grammar/grammar_matcher.h"

namespace kvforge::cli {
namespace {

struct GrammarFlags {
  std::string action;
  std::vector<std::string> files;
  int walks = 20;
  int max_steps = 200;
  std::string model;
  bool schema = false;
  bool lowered = false;
  bool byte_walks = false;
  bool whole_walks = false;
};

ConstraintSpec spec_of(const GrammarFlags& f) {
  if (f.files.size() != 1) throw std::invalid_argument("grammar check: give one FILE");
  return constraint_spec_of_file(f.files[0], f.schema);
}

void time_first_mask(const ConstraintSpec& spec, const std::string& model) {
  const gguf::GgufFile file = gguf::GgufFile::open(resolve_model_path(model));
  const Tokenizer tok = Tokenizer::from_gguf(file);
  auto vocab = grammar_vocabulary(tok);
  const auto t0 = std::chrono::steady_clock::now();
  auto c = std::make_shared<GrammarConstraint>(compile_gbnf(constraint_gbnf(spec)), vocab);
  GrammarMatcher m(c);
  const TokenMask& mask = m.allowed();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  size_t allowed = 0;
  for (uint64_t w : mask) allowed += size_t(__builtin_popcountll(w));
  std::printf("# %zu of %zu tokens allowed first; compile + first mask %.2f ms\n", allowed,
              vocab->n_vocab(), ms);
}

void run_grammar(const GrammarFlags& f) {
  if (f.action == "bench") {
    if (f.model.empty()) throw std::invalid_argument("grammar bench: -m MODEL is required");
    ConstraintLimits limits;
    limits.class_walks = !f.byte_walks;
    limits.repetition_shifts = !f.whole_walks;
    if (f.whole_walks) {
      limits.max_cached_unions = 0;
      limits.group_cuts = false;
    }
    run_grammar_bench(f.model, f.files, f.walks, f.max_steps, limits);
    return;
  }
  if (f.action != "check")
    throw std::invalid_argument("grammar: unknown action '" + f.action + "' (check or bench)");
  const ConstraintSpec spec = spec_of(f);
  const std::string gbnf = constraint_gbnf(spec);
  const Grammar g = compile_gbnf(gbnf);
  if (spec.kind == ConstraintSpec::Kind::JsonSchema) std::printf("%s", gbnf.c_str());
  std::printf("# ok: %zu rules, %zu elements, %zu byte sets after lowering\n", g.rules(),
              g.elements.size(), g.byte_sets.size());
  if (f.lowered) std::printf("%s", g.describe().c_str());
  if (!f.model.empty()) time_first_mask(spec, f.model);
}

void declare_flags(CLI::App& sub, GrammarFlags& f) {
  sub.add_option("action", f.action, "check or bench")->required();
  sub.add_option("files", f.files, "GBNF file, or JSON schema (.json or --schema)")->required();
  sub.add_option("--walks", f.walks, "bench: random walks per grammar")->capture_default_str();
  sub.add_option("--max-steps", f.max_steps, "bench: tokens per walk at most")
      ->capture_default_str();
  sub.add_flag("--schema", f.schema, "the file is a JSON schema whatever its name");
  sub.add_flag("--lowered", f.lowered, "print the compiled byte-level rules");
  sub.add_flag("--byte-walks", f.byte_walks, "bench: walk the byte trie only (a baseline)");
  sub.add_flag("--whole-walks", f.whole_walks,
               "bench: walk every cut stack whole and alone, build every union anew (a baseline)");
  sub.add_option("-m,--model", f.model,
                 "check: bind to this model's vocabulary and time the first mask; bench: required");
}

}  // namespace

void declare_grammar_command(CLI::App& sub) {
  declare_command<GrammarFlags>(sub, run_grammar, declare_flags);
}

}  // namespace kvforge::cli
