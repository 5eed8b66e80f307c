// The bytes that end a stream failing after its 200 went out (an engine step
// that threw, a tensor-parallel rank lost: the request fails with 500 or 503)
// in each API family's shape equal the committed golden data/stream_errors.json,
// which client_errors.test.mjs serves to each family's clients: together they
// show a mid-stream error reaching those clients as an error they surface.
// After a deliberate change of these shapes, KVFORGE_WRITE_GOLDEN=1 rewrites
// the golden; then run client_errors.test.mjs against it.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "app/server/anthropic_api.h"
#include "app/server/ollama_api.h"
#include "app/server/openai_response.h"
#include "app/server/responses_api.h"
#include "testdata.h"

namespace kvforge::server {
namespace {

using nlohmann::json;

const ApiError kLost(503, "the server cannot serve: rank 1 did not answer within 2 s",
                     "server_error");
constexpr const char* kModel = "kvforge-kjv-4m";

RequestLimits stream_test_limits() {
  RequestLimits l;
  l.model_ids = {kModel};
  return l;
}

// Chat completions: a first piece of text, then the failure.
std::string chat_stream() {
  const ResponseMeta meta{ApiKind::kChat, "chatcmpl-golden", 1700000000, kModel};
  std::string out = sse_event(stream_chunk(meta, 0, "In the", true, std::nullopt, std::nullopt,
                                           /*include_usage=*/false));
  write_stream_error(kLost, [&](const std::string& s) {
    out += s;
    return true;
  });
  return out;
}

// Ollama's lines are the chat stream translated; its text lines carry the
// time, so only the failure is kept (and nothing may follow it).
std::string ollama_stream() {
  const OllamaRequest r = ollama_chat_request(
      R"({"model": "kvforge-kjv-4m", "messages": [{"role": "user", "content": "Hi"}]})", stream_test_limits());
  OllamaStreamTranslator translator(r, std::chrono::steady_clock::now());
  std::string out;
  write_stream_error(kLost, [&](const std::string& s) {
    out += translator.translate(s);
    return true;
  });
  return out;
}

std::string responses_stream() {
  const ResponsesRequest r = parse_responses_request(
      R"({"model": "kvforge-kjv-4m", "input": "In the beginning", "stream": true})", stream_test_limits());
  std::string out;
  ResponsesEventWriter events(r, ResponseIds{"resp_golden", "msg_golden", 1700000000}, kModel, 5,
                              [&](const std::string& s) {
                                out += s;
                                return true;
                              });
  EXPECT_TRUE(events.start() && events.admitted(0) && events.delta("In the"));
  events.error(kLost);
  return out;
}

std::string anthropic_stream() {
  const MessagesRequest r = parse_messages_request(
      R"({"model": "kvforge-kjv-4m", "max_tokens": 8, "stream": true,
          "messages": [{"role": "user", "content": "In the beginning"}]})",
      stream_test_limits(), /*count_only=*/false);
  std::string out;
  MessagesEventWriter events(r, "msg_golden", 5, std::nullopt, [&](const std::string& s) {
    out += s;
    return true;
  });
  EXPECT_TRUE(events.start() && events.admitted(0) && events.delta("In the"));
  events.error(kLost);
  return out;
}

TEST(StreamErrors, EachFamilyEndsAsTheGoldenTheClientsAreShown) {
  const json now = {{"chat", chat_stream()},
                    {"responses", responses_stream()},
                    {"anthropic", anthropic_stream()},
                    {"ollama", ollama_stream()}};
  // The failure is the last thing each stream says.
  EXPECT_EQ(now["ollama"], R"({"error":")" + std::string(kLost.what()) + "\"}\n");
  EXPECT_TRUE(now["chat"].get<std::string>().ends_with("data: [DONE]\n\n"));
  const auto path = testing::source_dir() / "tests/app/server/data/stream_errors.json";
  if (const char* write = std::getenv("KVFORGE_WRITE_GOLDEN"); write && *write == '1') {
    std::ofstream(path) << now.dump(2) << "\n";
    GTEST_SKIP() << "wrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  const json golden = json::parse(text.str());
  for (const auto& [family, body] : now.items())
    EXPECT_EQ(body, golden.value(family, json())) << family << " (KVFORGE_WRITE_GOLDEN=1 "
                                                  << "rewrites " << path << ")";
}

}  // namespace
}  // namespace kvforge::server
