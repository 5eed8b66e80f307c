// Constrained sequences in the batching engine (paged and static): every
// reply is a sentence of its grammar, ending with the end token where the
// grammar completes, and a constrained sequence's tokens do not depend on
// what shares its batch, the prefill chunk size or the KV mode.
#include <gtest/gtest.h>

#include "engine/sampling/grammar/grammar_compiler.h"
#include "engine/sampling/grammar/grammar_constraint.h"
#include "engine_test_util.h"
#include "kvforge/engine.h"
#include "static_test_util.h"

namespace kvforge::testing {
namespace {

// The test model's 259-token vocabulary: 0-2 control tokens (2 ends), then the 256 bytes.
constexpr int32_t kEnd = 2;
constexpr const char* kGbnf =
    "root ::= \"{\\\"k\\\": \" [0-9]{1,3} \", \\\"s\\\": \\\"\" [a-z]{0,8} \"\\\"}\"";

std::shared_ptr<const GrammarConstraint> test_grammar(const Model& model) {
  std::vector<std::string> bytes(size_t(model.config().n_vocab));
  for (size_t t = 3; t < bytes.size() && t < 259; ++t) bytes[t] = std::string(1, char(t - 3));
  auto vocab = std::make_shared<GrammarVocabulary>(std::move(bytes), std::vector<int32_t>{kEnd});
  return std::make_shared<GrammarConstraint>(compile_gbnf(kGbnf), vocab);
}

struct Ask {
  std::vector<int32_t> prompt;
  SamplingParams params;
  int n = 1;
};

std::vector<Ask> constrained_asks(const Model& model) {
  auto g = test_grammar(model);
  std::vector<Ask> asks;
  for (int i = 0; i < 4; ++i) {
    Ask a{make_prompt(5 + 6 * i, uint32_t(40 + i)), {}, i == 3 ? 2 : 1};
    a.params.temperature = i == 0 ? 0.0f : 1.0f;
    a.params.seed = uint64_t(100 + i);
    a.params.max_tokens = 30;
    a.params.grammar = g;
    asks.push_back(std::move(a));
  }
  return asks;
}

// Runs `asks` (and `noise` unconstrained neighbours) to the end; the tokens
// of every branch of `asks`, in order.
std::vector<std::vector<int32_t>> run(Engine& engine, const std::vector<Ask>& asks, int noise) {
  std::vector<RequestId> ids;
  for (int i = 0; i < noise; ++i) {
    SamplingParams p;
    p.seed = uint64_t(i);
    p.max_tokens = 20 + i;
    engine.add_request(make_prompt(3 + 4 * i, uint32_t(i)), p, 1, {});
  }
  for (const Ask& a : asks) ids.push_back(engine.add_request(a.prompt, a.params, a.n, {}));
  EngineRecorder rec;
  for (int guard = 0; engine.has_unfinished(); ++guard) {
    if (guard > 10000) ADD_FAILURE() << "engine does not finish";
    if (guard > 10000) break;
    rec.record(engine.step());
  }
  std::vector<std::vector<int32_t>> out;
  for (size_t i = 0; i < asks.size(); ++i)
    for (int b = 0; b < asks[i].n; ++b) {
      const Trace& t = rec.at(ids[i], b);
      EXPECT_EQ(t.finish, FinishReason::Stop) << "request " << i << " branch " << b;
      out.push_back(t.tokens);
    }
  return out;
}

std::string text_of(const std::vector<int32_t>& tokens) {
  std::string s;
  for (int32_t t : tokens) s += char(t - 3);
  return s;
}

TEST(GrammarEngine, RepliesFollowTheGrammarWhateverTheBatchChunksOrKvMode) {
  const auto model = make_engine_test_model();
  ThreadPool pool(1);
  const std::vector<Ask> asks = constrained_asks(*model);
  EngineOptions options;
  options.eos_token_ids = {kEnd};
  // Reference: each request alone on a paged engine.
  std::vector<std::vector<int32_t>> alone;
  for (const Ask& a : asks) {
    Engine e(*model, pool, options);
    for (auto& t : run(e, {a}, 0)) alone.push_back(t);
  }
  const auto c = asks[0].params.grammar;
  for (const auto& tokens : alone) {
    const std::string text = text_of(tokens);
    const auto stacks = c->advance(c->initial_stacks(), text);
    EXPECT_TRUE(!stacks.empty() && stacks[0] == kEmptyStack) << text;
  }
  EngineOptions chunked = options;
  chunked.max_batched_tokens = 7;
  Engine crowded(*model, pool, chunked);
  EXPECT_EQ(run(crowded, asks, 5), alone) << "paged, 5 neighbours, prefill chunks of 7";
  Engine fixed(*model, pool, compile_plans(*model, small_static_config(4), 1), options);
  EXPECT_EQ(run(fixed, asks, 0), alone) << "static slots";
}

}  // namespace
}  // namespace kvforge::testing
