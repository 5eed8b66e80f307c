#include "app/cli/grammar_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "app/cli/cli_common.h"
#include "app/percentiles.h"
#include "app/structured/constraint_cache.h"
#include "core/gguf/gguf_file.h"
#include "engine/sampling/grammar/grammar_compiler.h"
#include "engine/sampling/grammar/grammar_matcher.h"

namespace kvforge::cli {
namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

struct WalkTimes {
  std::vector<double> mask_us, accept_us;
};

// One walk: a uniformly drawn allowed token per step, until the end token
// is drawn or max_steps.
void walk(const std::shared_ptr<const GrammarConstraint>& c, std::mt19937& rng, int max_steps,
          WalkTimes& times) {
  GrammarMatcher m(c);
  std::vector<int32_t> ok;
  for (int step = 0; step < max_steps; ++step) {
    const auto t0 = Clock::now();
    const TokenMask& mask = m.allowed();
    times.mask_us.push_back(us_since(t0));
    ok.clear();
    for (size_t w = 0; w < mask.size(); ++w)
      for (uint64_t bits = mask[w]; bits; bits &= bits - 1)
        ok.push_back(int32_t(w * 64 + size_t(__builtin_ctzll(bits))));
    if (ok.empty()) throw std::runtime_error("grammar bench: a dead end (no token allowed)");
    const int32_t t = ok[rng() % ok.size()];
    const auto t1 = Clock::now();
    m.accept(t);
    times.accept_us.push_back(us_since(t1));
    if (m.is_ended()) return;
  }
}

void print_row(const std::string& name, double first_ms, const WalkTimes& t) {
  auto pct = [](std::vector<double> v, double q) { return percentile(v, q); };
  const double max = t.mask_us.empty() ? 0 : *std::max_element(t.mask_us.begin(), t.mask_us.end());
  std::printf("%-28s %9.2f %8zu %9.1f %9.1f %10.1f %9.1f %9.1f\n", name.c_str(), first_ms,
              t.mask_us.size(), pct(t.mask_us, 0.5), pct(t.mask_us, 0.99), max,
              pct(t.accept_us, 0.5), pct(t.accept_us, 0.99));
}

}  // namespace

ConstraintSpec constraint_spec_of_file(const std::string& path, bool schema) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("grammar: cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  const bool json = schema || (path.size() > 5 && path.substr(path.size() - 5) == ".json");
  return {json ? ConstraintSpec::Kind::JsonSchema : ConstraintSpec::Kind::Gbnf, ss.str(), path};
}

void run_grammar_bench(const std::string& model, const std::vector<std::string>& files, int walks,
                       int max_steps) {
  const gguf::GgufFile file = gguf::GgufFile::open(resolve_model_path(model));
  const Tokenizer tok = Tokenizer::from_gguf(file);
  const auto t_vocab = Clock::now();
  const auto vocab = grammar_vocabulary(tok);
  std::printf("# vocabulary: %zu tokens, trie of %zu nodes built in %.1f ms\n", vocab->n_vocab(),
              vocab->trie.size(), us_since(t_vocab) / 1000);
  std::printf("%-28s %9s %8s %9s %9s %10s %9s %9s\n", "grammar", "first_ms", "tokens", "mask_p50",
              "mask_p99", "mask_max", "adv_p50", "adv_p99");
  WalkTimes all;
  std::mt19937 rng(1);
  for (const std::string& path : files) {
    const ConstraintSpec spec = constraint_spec_of_file(path, false);
    const auto t0 = Clock::now();
    auto c = std::make_shared<GrammarConstraint>(compile_gbnf(constraint_gbnf(spec)), vocab);
    GrammarMatcher(c).allowed();
    const double first_ms = us_since(t0) / 1000;
    WalkTimes t;
    for (int w = 0; w < walks; ++w) walk(c, rng, max_steps, t);
    print_row(path.substr(path.rfind('/') + 1), first_ms, t);
    all.mask_us.insert(all.mask_us.end(), t.mask_us.begin(), t.mask_us.end());
    all.accept_us.insert(all.accept_us.end(), t.accept_us.begin(), t.accept_us.end());
  }
  print_row("all", 0, all);
}

}  // namespace kvforge::cli
