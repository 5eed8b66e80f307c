// Client input that used to reach a 500 or cost unbounded memory: numbers
// beyond a double, template variables that replace the conversation, prompts
// longer than the context (refused before or while tokenizing), and the
// global limit on request bytes being prepared at once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "app/server/openai_error.h"
#include "app/server/openai_request.h"
#include "app/server/prepare_gate.h"
#include "app/tokenizer/tokenizer.h"
#include "tokenizer_tiny_vocab.h"

namespace kvforge::server {
namespace {

int status_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const ApiError& e) {
    return e.status();
  }
  return 200;
}

TEST(ServerInputBounds, NumbersBeyondADoubleAreA400) {
  const RequestLimits limits;
  for (const char* body : {R"({"prompt":"a","temperature":1e309})", R"({"prompt":"a","x":1e400})",
                           R"({"prompt":"a","x":[-1e999]})"}) {
    EXPECT_EQ(status_of([&] { parse_json_body(body, limits); }), 400) << body;
  }
}

TEST(ServerInputBounds, ChatTemplateKwargsMayOnlyAddNames) {
  const RequestLimits limits;
  auto parse = [&](const std::string& kwargs) {
    parse_chat_request(
        parse_json_body(R"({"messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":)" +
                            kwargs + "}",
                        limits),
        limits);
  };
  EXPECT_EQ(status_of([&] { parse(R"({"enable_thinking":false})"); }), 200);
  for (const char* name : {"messages", "tools", "add_generation_prompt", "bos_token", "eos_token",
                           "raise_exception", "namespace", "range", "strftime_now"}) {
    try {
      parse(std::string("{\"") + name + "\":5}");
      ADD_FAILURE() << name << " accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_NE(std::string(e.what()).find(std::string("'") + name + "'"), std::string::npos)
          << e.what();
    }
  }
}

TEST(ServerInputBounds, TokenizingStopsPastTheLimit) {
  const Tokenizer t = Tokenizer::from_vocabulary(testing::tiny_bpe_vocab({"ab"}, {"a b"}));
  std::string text;
  for (int i = 0; i < 50000; ++i) text += "a ";  // words of one byte-level token or two
  EXPECT_GE(t.encode(text, false, true).size(), 50000u);
  const std::vector<int32_t> cut = t.encode(text, false, true, 500);
  EXPECT_GT(cut.size(), 500u);
  EXPECT_LT(cut.size(), 510u);  // checked after each word
  // The bytes-per-token bound: no text is fewer tokens than bytes / max_token_bytes().
  EXPECT_GE(t.max_token_bytes(), 1u);
  EXPECT_GE(t.encode("hello world", false, true).size() * t.max_token_bytes(), 11u);
}

TEST(ServerInputBounds, PrepareGateBoundsBytesInFlight) {
  PrepareGate gate(100, std::chrono::milliseconds(300));
  {
    const PrepareGate::Ticket a = gate.enter(60);
    EXPECT_EQ(gate.in_flight(), 60u);
    // Does not fit beside `a`: waits, then 503.
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(status_of([&] { gate.enter(60); }), 503);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(250));
    // A cancelled wait ends at once with 499.
    EXPECT_EQ(status_of([&] { gate.enter(60, [] { return true; }); }), 499);
    const PrepareGate::Ticket b = gate.enter(40);  // fits
    EXPECT_EQ(gate.in_flight(), 100u);
  }
  EXPECT_EQ(gate.in_flight(), 0u);
  // Larger than the whole capacity: runs alone.
  std::optional<PrepareGate::Ticket> big;
  big.emplace(gate.enter(1000));
  // A waiter gets in as soon as the bytes are freed.
  std::atomic<bool> entered{false};
  std::thread waiter([&] {
    const PrepareGate::Ticket t = gate.enter(10);
    entered = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(entered);
  big.reset();
  waiter.join();
  EXPECT_TRUE(entered);
}

}  // namespace
}  // namespace kvforge::server
