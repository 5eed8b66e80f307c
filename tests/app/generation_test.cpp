// generate() (app/generation.h): one prompt through a TextEngine, the same
// way on the paged engine and on the static pipeline's slots. Greedy text
// agrees between them; a max_tokens past the context is cut to fit and
// reported; a truncated prompt is reported; a static engine reusing its
// slot serves the next turn from the kept K/V with the same text.
#include "app/generation.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/static_pipeline/plan_compiler.h"
#include "kvforge/engine.h"
#include "test_models.h"

namespace kvforge {
namespace {

class GenerationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RandomModelSpec spec;
    spec.name = "generation";
    spec.seed = 21;
    model_ = testing::make_test_model(spec);
    tokenizer_ = std::make_unique<Tokenizer>(Tokenizer::from_gguf(model_->file()));
  }

  // capacity 48 = 32 + 16, chunk 8.
  std::unique_ptr<TextEngine> static_engine(OverflowPolicy overflow = OverflowPolicy::Error,
                                            bool reuse_slots = false) {
    StaticConfig c;
    c.max_prompt_len = 32;
    c.min_response_len = 16;
    c.prefill_chunk = 8;
    c.generate_variants = {16, 32, 48};
    return std::make_unique<TextEngine>(
        *tokenizer_, std::make_unique<Engine>(*model_, pool_, compile_plans(*model_, c, 1),
                                              EngineOptions{.eos_token_ids = tokenizer_->eog_ids(),
                                                            .overflow = overflow,
                                                            .reuse_slots = reuse_slots}));
  }
  std::unique_ptr<TextEngine> paged_engine() {
    EngineOptions o;
    o.n_ctx = 256;
    o.max_seqs = 1;
    return std::make_unique<TextEngine>(*model_, *tokenizer_, pool_, o);
  }
  std::vector<int32_t> prompt(const std::string& text) const {
    return tokenizer_->encode(text, tokenizer_->add_bos(), true);
  }

  static SamplingParams greedy(std::optional<int32_t> max_tokens) {
    SamplingParams p;
    p.temperature = 0;
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    return p;
  }

  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  ThreadPool pool_{1};
};

TEST_F(GenerationTest, GreedyTextIsTheSameOnBothEngines) {
  const std::vector<int32_t> p = prompt("In the beginning");
  std::string streamed;
  const GenerationResult st =
      generate(*static_engine(), p, greedy(12), [&](std::string_view s) { streamed += s; });
  const GenerationResult pg = generate(*paged_engine(), p, greedy(12), nullptr);
  EXPECT_EQ(st.tokens, pg.tokens);
  EXPECT_EQ(st.text, pg.text);
  EXPECT_EQ(streamed, st.text);
  EXPECT_EQ(st.tokens.size(), 12u);
  EXPECT_EQ(st.finish_reason, "length");
  EXPECT_EQ(st.prompt_tokens, int(p.size()));
  EXPECT_EQ(st.prompt_tokens_dropped, 0);
  EXPECT_FALSE(st.reached_context);
  EXPECT_EQ(st.decode_steps, 11);
}

TEST_F(GenerationTest, AMaxTokensPastTheCapacityIsCutAndReported) {
  const std::vector<int32_t> p = prompt("Hi");
  const GenerationResult cut = generate(*static_engine(), p, greedy(100), nullptr);
  EXPECT_EQ(cut.prompt_tokens + int(cut.tokens.size()), 48);
  EXPECT_EQ(cut.finish_reason, "length");
  EXPECT_TRUE(cut.reached_context);
  const GenerationResult unset = generate(*static_engine(), p, greedy(std::nullopt), nullptr);
  EXPECT_EQ(unset.tokens, cut.tokens);
  EXPECT_FALSE(unset.reached_context) << "no max_tokens asked for: the capacity is the limit";
}

TEST_F(GenerationTest, ATruncatedPromptIsReported) {
  std::vector<int32_t> p = prompt(std::string(40, 'x'));
  ASSERT_GT(p.size(), 32u);
  EXPECT_THROW(generate(*static_engine(), p, greedy(4), nullptr), RequestRejected);
  const GenerationResult r =
      generate(*static_engine(OverflowPolicy::TruncateLeft), p, greedy(4), nullptr);
  EXPECT_EQ(r.prompt_tokens, 32);
  EXPECT_EQ(r.prompt_tokens_dropped, int(p.size()) - 32);
  const std::vector<int32_t> last(p.end() - 32, p.end());
  EXPECT_EQ(r.tokens, generate(*paged_engine(), last, greedy(4), nullptr).tokens);
}

TEST_F(GenerationTest, AReusedSlotServesTheNextTurnWithTheSameText) {
  const auto engine = static_engine(OverflowPolicy::Error, /*reuse_slots=*/true);
  const auto paged = paged_engine();
  const std::vector<int32_t> first = prompt("Let");
  const GenerationResult r1 = generate(*engine, first, greedy(6), nullptr);
  std::vector<int32_t> second = first;
  second.insert(second.end(), r1.tokens.begin(), r1.tokens.end());
  for (int32_t t : {70, 71, 72}) second.push_back(t);  // three more bytes of text
  const GenerationResult r2 = generate(*engine, second, greedy(6), nullptr);
  EXPECT_EQ(engine->engine().stats().prefix.tokens_reused, int64_t(first.size() + 5))
      << "the prompt and the decoded replies' tokens stay in the slot";
  EXPECT_EQ(r2.text, generate(*paged, second, greedy(6), nullptr).text);
}

}  // namespace
}  // namespace kvforge
