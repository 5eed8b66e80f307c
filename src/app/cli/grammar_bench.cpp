#include "app/cli/grammar_bench.h"

#include <time.h>

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

// The thread's CPU time: on a shared machine a mask's wall time may include
// whole scheduler ticks spent descheduled, its CPU time does not.
double cpu_us() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) / 1e3;
}

// What an empty cpu_us() bracket reads (the clock's own cost), subtracted
// from each mask's CPU time.
double cpu_bracket_us() {
  std::vector<double> v;
  for (int i = 0; i < 1000; ++i) {
    const double t0 = cpu_us();
    v.push_back(cpu_us() - t0);
  }
  return percentile(v, 0.5);
}

struct WalkTimes {
  std::vector<double> mask_us, mask_cpu_us, accept_us;
  uint64_t hash = 1469598103934665603ull;  // FNV-1a of every mask: equal runs, equal masks
  void add(const WalkTimes& t) {
    mask_us.insert(mask_us.end(), t.mask_us.begin(), t.mask_us.end());
    mask_cpu_us.insert(mask_cpu_us.end(), t.mask_cpu_us.begin(), t.mask_cpu_us.end());
    accept_us.insert(accept_us.end(), t.accept_us.begin(), t.accept_us.end());
    hash = (hash ^ t.hash) * 1099511628211ull;
  }
};

// One walk: a uniformly drawn allowed token per step, until the end token
// is drawn or max_steps.
void walk(const std::shared_ptr<const GrammarConstraint>& c, std::mt19937& rng, int max_steps,
          double bracket_us, WalkTimes& times) {
  GrammarMatcher m(c);
  std::vector<int32_t> ok;
  for (int step = 0; step < max_steps; ++step) {
    const double c0 = cpu_us();
    const auto t0 = Clock::now();
    const TokenMask& mask = m.allowed();
    times.mask_us.push_back(us_since(t0));
    times.mask_cpu_us.push_back(std::max(0.0, cpu_us() - c0 - bracket_us));
    ok.clear();
    for (uint64_t w : mask) times.hash = (times.hash ^ w) * 1099511628211ull;
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
  auto max = [](const std::vector<double>& v) {
    return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
  };
  std::printf("%-30s %8.2f %7zu %8.1f %9.1f %9.1f %8.1f %9.1f %9.1f %8.1f %8.1f\n",
              name.substr(0, 30).c_str(), first_ms, t.mask_us.size(), pct(t.mask_us, 0.5),
              pct(t.mask_us, 0.99), max(t.mask_us), pct(t.mask_cpu_us, 0.5),
              pct(t.mask_cpu_us, 0.99), max(t.mask_cpu_us), pct(t.accept_us, 0.5),
              pct(t.accept_us, 0.99));
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
                       int max_steps, const ConstraintLimits& limits) {
  const gguf::GgufFile file = gguf::GgufFile::open(resolve_model_path(model));
  const Tokenizer tok = Tokenizer::from_gguf(file);
  const auto t_vocab = Clock::now();
  const auto vocab = grammar_vocabulary(tok);
  std::printf("# vocabulary: %zu tokens (at most %zu bytes), trie of %zu nodes built in %.1f ms\n",
              vocab->n_vocab(), vocab->trie.max_depth(), vocab->trie.size(),
              us_since(t_vocab) / 1000);
  const double bracket_us = cpu_bracket_us();
  std::printf("# wall and thread CPU time per mask, us (CPU less the clock's %.1f us)\n",
              bracket_us);
  std::printf("%-30s %8s %7s %8s %9s %9s %8s %9s %9s %8s %8s\n", "grammar", "first_ms", "tokens",
              "mask_p50", "mask_p99", "mask_max", "cpu_p50", "cpu_p99", "cpu_max", "adv_p50",
              "adv_p99");
  WalkTimes all;
  std::mt19937 rng(1);
  for (const std::string& path : files) {
    const ConstraintSpec spec = constraint_spec_of_file(path, false);
    const auto t0 = Clock::now();
    auto c =
        std::make_shared<GrammarConstraint>(compile_gbnf(constraint_gbnf(spec)), vocab, limits);
    GrammarMatcher(c).allowed();
    const double first_ms = us_since(t0) / 1000;
    WalkTimes t;
    for (int w = 0; w < walks; ++w) walk(c, rng, max_steps, bracket_us, t);
    print_row(path.substr(path.rfind('/') + 1), first_ms, t);
    all.add(t);
  }
  print_row("all", 0, all);
  std::printf("# hash of every mask: %016llx\n", static_cast<unsigned long long>(all.hash));
}

}  // namespace kvforge::cli
