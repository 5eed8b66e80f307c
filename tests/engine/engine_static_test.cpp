// The Engine on static slots: requests on the B slots of compiled plans.
// Greedy tokens must equal the single-sequence oracle whatever
// shares the batch or waits in the queue; slots must come back free after
// finishing, aborting and stopping; requests no slot can serve are rejected.
#include <gtest/gtest.h>

#include <set>
#include <span>
#include <utility>
#include <vector>

#include "engine_test_util.h"
#include "kvforge/engine.h"
#include "static_test_util.h"

namespace kvforge::testing {
namespace {

// Steps until done; no slot stays taken.
void drain_engine(Engine& engine, EngineRecorder& rec) {
  for (int guard = 0; engine.has_unfinished() && guard < 10000; ++guard) rec.record(engine.step());
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
}

class EngineStaticTest : public ::testing::Test {
 protected:
  void SetUp() override { model_ = make_engine_test_model(); }

  std::unique_ptr<Engine> make(int32_t slots, EngineOptions options = {}) {
    return std::make_unique<Engine>(*model_, pool_,
                                    compile_plans(*model_, small_static_config(slots), 1), options);
  }

  // Steps until done; checks the slot accounting after every step.
  static void drain(Engine& e, EngineRecorder& rec) {
    for (int guard = 0; e.has_unfinished(); ++guard) {
      ASSERT_LT(guard, 10000) << "engine does not finish";
      rec.record(e.step());
      const EngineStats s = e.stats();
      EXPECT_LE(s.kv_blocks_used, s.kv_blocks_total);
      EXPECT_EQ(s.kv_blocks_used + s.kv_blocks_free, s.kv_blocks_total);
      EXPECT_EQ(s.running, s.kv_blocks_used);
    }
    EXPECT_EQ(e.stats().kv_blocks_used, 0) << "a slot leaked";
    EXPECT_EQ(e.stats().kv_slots_used, 0);
  }

  std::unique_ptr<Model> model_;
  ThreadPool pool_{1};
};

TEST_F(EngineStaticTest, GreedyTokensEqualTheOracleWithQueueingAndSharedSteps) {
  auto engine = make(2);
  // More requests than slots, different prompt lengths (below, at and above
  // the prefill chunk of 8, up to max_prompt_len 40) and lengths of output,
  // so slots are reused and decodes run with one or two active rows.
  const std::vector<std::pair<int, int>> shapes = {{1, 12}, {7, 20}, {8, 5}, {9, 16}, {40, 24}};
  std::vector<RequestId> ids;
  std::vector<std::vector<int32_t>> prompts;
  for (size_t i = 0; i < shapes.size(); ++i) {
    prompts.push_back(make_prompt(shapes[i].first, uint32_t(i + 1)));
    ids.push_back(engine->add_request(prompts.back(), greedy(shapes[i].second), 1, {}));
  }
  EXPECT_EQ(engine->stats().waiting, int(shapes.size()));
  EngineRecorder rec;
  drain(*engine, rec);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Trace& got = rec.at(ids[i], 0);
    EXPECT_EQ(got.tokens, run_alone(*model_, prompts[i], shapes[i].second).tokens)
        << "request " << i << " (prompt " << shapes[i].first << ")";
    EXPECT_EQ(got.finish, FinishReason::Length);
  }
  EXPECT_GT(engine->stats().tokens_generated, 0);
}

TEST_F(EngineStaticTest, WithoutMaxTokensABranchEndsAtTheSlotCapacity) {
  auto engine = make(1);
  SamplingParams p = greedy(8);
  p.max_tokens.reset();
  const auto prompt = make_prompt(30, 5);
  const RequestId id = engine->add_request(prompt, p, 1, {});
  EngineRecorder rec;
  drain(*engine, rec);
  const Trace& t = rec.at(id, 0);
  EXPECT_EQ(int(prompt.size() + t.tokens.size()), engine->max_sequence_tokens());
  EXPECT_EQ(t.finish, FinishReason::Length);
  EXPECT_EQ(t.tokens, run_alone(*model_, prompt, int(t.tokens.size())).tokens);
}

TEST_F(EngineStaticTest, AbortFreesTheSlotForTheNextRequest) {
  auto engine = make(1);
  const auto a = make_prompt(10, 1), b = make_prompt(12, 2), c = make_prompt(6, 3);
  const RequestId ra = engine->add_request(a, greedy(20), 1, {});
  const RequestId rb = engine->add_request(b, greedy(20), 1, {});
  const RequestId rc = engine->add_request(c, greedy(6), 1, {});
  EngineRecorder rec;
  rec.record(engine->step());  // `a` takes the only slot
  rec.record(engine->step());
  EXPECT_EQ(engine->stats().kv_blocks_used, 1);
  EXPECT_EQ(engine->stats().waiting, 2);
  EXPECT_TRUE(engine->abort(rb));  // still waiting
  EXPECT_TRUE(engine->abort(ra));  // running
  EXPECT_FALSE(engine->abort(ra));
  EXPECT_EQ(engine->stats().kv_blocks_used, 0);
  drain(*engine, rec);
  EXPECT_EQ(rec.at(ra, 0).tokens.size(), 2u);
  EXPECT_FALSE(rec.at(ra, 0).finish.has_value()) << "no event follows an abort";
  EXPECT_TRUE(rec.at(rb, 0).tokens.empty());
  EXPECT_EQ(rec.at(rc, 0).tokens, run_alone(*model_, c, 6).tokens);
}

TEST_F(EngineStaticTest, BranchesSampleWithSeedPlusBranchAndStopIndividually) {
  auto engine = make(3);
  const auto prompt = make_prompt(9, 4);
  SamplingParams p;
  p.temperature = 1.0f;
  p.seed = 77;
  p.max_tokens = 10;
  p.ignore_eos = true;
  const RequestId both = engine->add_request(prompt, p, 2, {});
  SamplingParams p1 = p;
  p1.seed = 78;
  const RequestId alone = engine->add_request(prompt, p1, 1, {});
  EngineRecorder rec;
  rec.record(engine->step());
  EXPECT_EQ(engine->stats().kv_blocks_used, 3);
  drain(*engine, rec);
  EXPECT_EQ(rec.at(both, 1).tokens, rec.at(alone, 0).tokens) << "branch 1 draws with seed + 1";
  EXPECT_NE(rec.at(both, 0).tokens, rec.at(both, 1).tokens);

  const RequestId stopped = engine->add_request(prompt, p, 2, {});
  rec.record(engine->step());
  EXPECT_TRUE(engine->stop_branch(stopped, 1));
  EXPECT_FALSE(engine->stop_branch(stopped, 1));
  EXPECT_EQ(engine->stats().kv_blocks_used, 1);
  drain(*engine, rec);
  EXPECT_EQ(rec.at(stopped, 0).tokens.size(), 10u);
}

TEST_F(EngineStaticTest, EndOfGenerationStopsWithoutEmittingTheToken) {
  const auto prompt = make_prompt(5, 9);
  const int32_t first = run_alone(*model_, prompt, 1).tokens[0];
  auto engine = make(1, {.eos_token_ids = {first}, .overflow = OverflowPolicy::Error});
  SamplingParams p = greedy(5);
  p.ignore_eos = false;
  const RequestId id = engine->add_request(prompt, p, 1, {});
  EngineRecorder rec;
  drain(*engine, rec);
  EXPECT_TRUE(rec.at(id, 0).tokens.empty());
  EXPECT_EQ(rec.at(id, 0).finish, FinishReason::Stop);
}

TEST_F(EngineStaticTest, RejectsWhatNoSlotCanServeAndTruncatesOnlyWhenAsked) {
  auto engine = make(2);
  const auto too_long = make_prompt(41, 1);  // max_prompt_len 40
  auto message = [&](auto&& call) {
    try {
      call();
    } catch (const RequestRejected& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message([&] {
              engine->add_request(too_long, greedy(4), 1, {});
            }).find("exceeds the static pipeline's max_prompt_len of 40"),
            std::string::npos);
  EXPECT_NE(message([&] {
              engine->add_request(make_prompt(4, 1), greedy(4), 3, {});
            }).find("n must be in [1, 2]"),
            std::string::npos);
  EXPECT_NE(message([&] {
              engine->add_request(make_prompt(40, 1), greedy(25), 1, {});
            }).find("exceeds the static slot capacity of 64"),
            std::string::npos);
  EXPECT_FALSE(engine->has_unfinished()) << "nothing queued by a rejection";

  auto truncating = make(1, {.eos_token_ids = {}, .overflow = OverflowPolicy::TruncateLeft});
  const RequestId id = truncating->add_request(too_long, greedy(6), 1, {});
  EngineRecorder rec;
  drain(*truncating, rec);
  const std::vector<int32_t> last40(too_long.begin() + 1, too_long.end());
  EXPECT_EQ(rec.at(id, 0).tokens, run_alone(*model_, last40, 6).tokens);
}

TEST_F(EngineStaticTest, AReusedSlotKeepsTheSharedPrefixAndGivesTheOraclesTokens) {
  auto engine =
      make(2, {.eos_token_ids = {}, .overflow = OverflowPolicy::Error, .reuse_slots = true});
  const auto first = make_prompt(20, 7), other = make_prompt(12, 8);
  const RequestId a = engine->add_request(first, greedy(6), 1, {});
  engine->add_request(other, greedy(6), 1, {});
  EngineRecorder rec;
  drain(*engine, rec);
  EXPECT_EQ(engine->stats().prefix.tokens_reused, 0);
  // The next turn: the first prompt, 5 of its 6 tokens (the last was never
  // decoded, so its K/V is not in the slot) and 3 new ones.
  std::vector<int32_t> next = first;
  next.insert(next.end(), rec.at(a, 0).tokens.begin(), rec.at(a, 0).tokens.end() - 1);
  for (int32_t t : make_prompt(3, 9)) next.push_back(t);
  const int64_t computed = engine->stats().tokens_computed;
  const RequestId b = engine->add_request(next, greedy(8), 1, {});
  drain(*engine, rec);
  EXPECT_EQ(engine->stats().prefix.tokens_reused, 25) << "the slot of `first`, not the other";
  EXPECT_EQ(engine->stats().tokens_computed - computed, 3 + 7) << "3 new prompt tokens + 7 decodes";
  EXPECT_EQ(rec.at(b, 0).tokens, run_alone(*model_, next, 8).tokens);

  // More new tokens than a prefill chunk (8): the whole prompt is prefilled.
  std::vector<int32_t> longer = next;
  for (int32_t t : make_prompt(9, 10)) longer.push_back(t);
  const RequestId c = engine->add_request(longer, greedy(4), 1, {});
  drain(*engine, rec);
  EXPECT_EQ(engine->stats().prefix.tokens_reused, 25);
  EXPECT_EQ(rec.at(c, 0).tokens, run_alone(*model_, longer, 4).tokens);
}

TEST_F(EngineStaticTest, WithoutReuseNoSlotKeepsAnything) {
  auto engine = make(1);
  const auto prompt = make_prompt(10, 3);
  engine->add_request(prompt, greedy(4), 1, {});
  EngineRecorder rec;
  drain(*engine, rec);
  const RequestId again = engine->add_request(prompt, greedy(4), 1, {});
  drain(*engine, rec);
  EXPECT_EQ(engine->stats().prefix.tokens_reused, 0);
  EXPECT_EQ(rec.at(again, 0).tokens, run_alone(*model_, prompt, 4).tokens);
}

// Requests of (prompt length, tokens) `shapes` queued at once on a static
// engine of 2 slots: each request's greedy tokens are the oracle's whatever
// shares its decode steps. Returns the prompts; `rec` has the tokens.
std::vector<std::vector<int32_t>> run_queued(Engine& engine, const Model& model,
                                             std::span<const std::pair<int, int>> shapes,
                                             EngineRecorder& rec, std::vector<RequestId>& ids) {
  std::vector<std::vector<int32_t>> prompts;
  for (size_t i = 0; i < shapes.size(); ++i) {
    prompts.push_back(make_prompt(shapes[i].first, uint32_t(i + 1)));
    ids.push_back(engine.add_request(prompts.back(), greedy(shapes[i].second), 1, {}));
  }
  drain_engine(engine, rec);
  for (size_t i = 0; i < shapes.size(); ++i)
    EXPECT_EQ(rec.at(ids[i], 0).tokens, run_alone(model, prompts[i], shapes[i].second).tokens)
        << "request " << i;
  return prompts;
}

// gemma2 with a window of 5 on a ring: queueing, shared decode steps and
// slot reuse give the oracle's tokens; a slot whose ring no longer holds the
// window before the shared prefix's end is prefilled again instead.
TEST(EngineStaticWindows, RingSlotsGiveTheOraclesTokensAndReuseOnlyWhatTheRingHolds) {
  RandomModelSpec spec;
  spec.name = "engine-gemma2";
  spec.arch = "gemma2";
  spec.n_ctx = 256;
  spec.sliding_window = 5;
  spec.swa_pattern = 2;
  spec.attn_softcap = 50.0f;
  spec.final_softcap = 30.0f;
  const auto model = make_test_model(spec);
  ThreadPool pool(2);
  Engine engine(*model, pool, compile_plans(*model, small_static_config(2), 2),
                {.eos_token_ids = {}, .overflow = OverflowPolicy::Error, .reuse_slots = true});
  const std::vector<std::pair<int, int>> shapes = {{1, 12}, {7, 20}, {40, 24}, {20, 6}};
  EngineRecorder rec;
  std::vector<RequestId> ids;
  const std::vector<std::vector<int32_t>> prompts = run_queued(engine, *model, shapes, rec, ids);
  // The 20-token request's slot holds 25 positions, its ring [20, 25): the
  // next turn continues at 25 and reuses all of them.
  std::vector<int32_t> next = prompts[3];
  next.insert(next.end(), rec.at(ids[3], 0).tokens.begin(), rec.at(ids[3], 0).tokens.end() - 1);
  for (int32_t t : make_prompt(3, 9)) next.push_back(t);
  const RequestId b = engine.add_request(next, greedy(1), 1, {});
  drain_engine(engine, rec);
  EXPECT_EQ(engine.stats().prefix.tokens_reused, 25);
  EXPECT_EQ(rec.at(b, 0).tokens, run_alone(*model, next, 1).tokens);
  // Sharing only the first 15 tokens of that slot's 28: its ring lost
  // positions 10..14, so the prompt is computed again, not read from
  // overwritten cells (truncating the slot to 15 would be refused).
  std::vector<int32_t> branch(next.begin(), next.begin() + 15);
  for (int32_t t : make_prompt(4, 10)) branch.push_back(t);
  const RequestId c = engine.add_request(branch, greedy(6), 1, {});
  drain_engine(engine, rec);
  EXPECT_EQ(engine.stats().prefix.tokens_reused, 25);
  EXPECT_EQ(rec.at(c, 0).tokens, run_alone(*model, branch, 6).tokens);
}

// gemma4 (shared-KV layers, windowed heads of their own size, per-layer
// embeddings), dense and its MoE variant (experts beside the dense FFN): the
// same with its slots; the engine's KV bytes are the static cache's, which
// keeps no K/V for the shared layers, and the experts change none of them.
TEST(EngineStaticWindows, Gemma4SlotsGiveTheOraclesTokens) {
  size_t dense_bytes = 0;
  for (const bool moe : {false, true}) {
    SCOPED_TRACE(moe ? "gemma4 MoE" : "gemma4");
    RandomModelSpec spec = gemma4_test_spec(3, 5);
    spec.head_dim_swa = 16;
    spec.gemma4_moe = moe;
    const auto model = make_test_model(spec);
    ThreadPool pool(2);
    const StaticConfig config = small_static_config(2);
    Engine engine(*model, pool, compile_plans(*model, config, 2), {.eos_token_ids = {}});
    const std::vector<std::pair<int, int>> shapes = {{1, 12}, {9, 20}, {40, 24}, {17, 6}};
    EngineRecorder rec;
    std::vector<RequestId> ids;
    run_queued(engine, *model, shapes, rec, ids);
    const StaticKvCache cache(model->config(), config.capacity(), 2, config.kv_format);
    EXPECT_EQ(engine.kv_pool_bytes(), cache.bytes());
    if (moe) {
      EXPECT_EQ(cache.bytes(), dense_bytes);
    } else {
      dense_bytes = cache.bytes();
    }
  }
}

TEST_F(EngineStaticTest, PromptTokensKeptFollowTheOverflowPolicy) {
  EXPECT_EQ(make(1)->prompt_tokens_kept(41), 41);
  auto truncating = make(1, {.eos_token_ids = {}, .overflow = OverflowPolicy::TruncateLeft});
  EXPECT_EQ(truncating->prompt_tokens_kept(41), 40);
  EXPECT_EQ(truncating->prompt_tokens_kept(12), 12);
}

// StepEvent::cached_tokens on static slots: what a reused slot kept.
TEST_F(EngineStaticTest, EventsReportThePrefixAReusedSlotKept) {
  auto engine =
      make(2, {.eos_token_ids = {}, .overflow = OverflowPolicy::Error, .reuse_slots = true});
  const auto run = [&](const std::vector<int32_t>& prompt, std::vector<int32_t>& generated) {
    const RequestId id = engine->add_request(prompt, greedy(6), 1, {});
    std::set<int32_t> cached;
    while (engine->has_unfinished())
      for (const StepEvent& ev : engine->step()) {
        if (ev.request != id) continue;
        cached.insert(ev.cached_tokens);
        if (ev.token) generated.push_back(ev.token->id);
      }
    return cached;
  };
  const auto first = make_prompt(20, 7);
  std::vector<int32_t> generated, ignored;
  EXPECT_EQ(run(first, generated), std::set<int32_t>{0});
  // The next turn keeps the prompt and 5 of the 6 generated tokens (the last never decoded).
  std::vector<int32_t> next = first;
  next.insert(next.end(), generated.begin(), generated.end() - 1);
  for (int32_t t : make_prompt(3, 9)) next.push_back(t);
  EXPECT_EQ(run(next, ignored), std::set<int32_t>{25});
  EXPECT_EQ(engine->stats().prefix.tokens_reused, 25);
}

}  // namespace
}  // namespace kvforge::testing
