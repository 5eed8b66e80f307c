// gpt-oss's harmony chat template (data/openai-gpt-oss-120b.jinja, the
// template gpt-oss GGUFs carry, as llama.cpp ships it in models/templates)
// renders through our Jinja engine to the exact text llama.cpp renders.
//
// Expected texts (data/gpt-oss-*.txt) are llama-server's /apply-template
// output (peer llama.cpp de3ff815, `llama-server --jinja --chat-template-file
// openai-gpt-oss-120b.jinja`) for the same conversations on 2026-12-07, the
// date strftime_now gives here too. llama.cpp hands the template an
// assistant message's `reasoning_content` as `thinking` (and drops its
// content when it has tool calls); these inputs say `thinking` directly.
#include <gtest/gtest.h>

#include "app/chat/chat_template.h"
#include "chat_fixture.h"

namespace kvforge {
namespace {

using nlohmann::ordered_json;

std::string render(const char* messages, const char* tools = "null",
                   ordered_json extra = ordered_json::object()) {
  const ChatTemplate t =
      ChatTemplate::parse(testing::read_chat_fixture("openai-gpt-oss-120b.jinja"));
  ChatTemplateInputs in;
  in.messages = ordered_json::parse(messages);
  in.tools = ordered_json::parse(tools);
  in.extra = std::move(extra);
  in.now = [] {
    std::tm tm{};
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 11;
    tm.tm_mday = 7;
    tm.tm_hour = 12;
    return tm;
  };
  return t.render(in);
}

constexpr const char* kTools = R"([{"type": "function", "function": {
  "name": "get_weather", "description": "Current weather of a city",
  "parameters": {"type": "object", "properties": {
    "city": {"type": "string", "description": "The city"},
    "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}])";

// The system message becomes the developer message's instructions; a second
// developer message is not rendered (the template reads only the first).
TEST(ChatTemplateGptOss, SystemDeveloperUserAssistant) {
  EXPECT_EQ(render(R"([{"role": "system", "content": "You are a helpful assistant."},
                       {"role": "developer", "content": "Answer in one word."},
                       {"role": "user", "content": "Hello!"},
                       {"role": "assistant", "content": "Hi there."},
                       {"role": "user", "content": "What is 2+2?"}])"),
            testing::read_chat_fixture("gpt-oss-plain.txt"));
}

// Tools as a TypeScript namespace, a call on the commentary channel, its
// result from functions.NAME, then a final answer.
TEST(ChatTemplateGptOss, ToolsCallsAndResults) {
  EXPECT_EQ(render(R"([{"role": "user", "content": "What is the weather in Paris?"},
      {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "id": "call_1",
        "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"},
      {"role": "assistant", "content": "It is 21 degrees."},
      {"role": "user", "content": "And in Rome?"}])",
                   kTools),
            testing::read_chat_fixture("gpt-oss-tools.txt"));
}

// The analysis channel of a turn still in progress (a tool call, no final
// answer after it), with reasoning_effort and model_identity set.
TEST(ChatTemplateGptOss, AnalysisBeforeAToolCall) {
  EXPECT_EQ(
      render(R"([{"role": "user", "content": "Weather in Oslo?"},
      {"role": "assistant", "thinking": "I should call the tool.", "tool_calls": [
        {"type": "function", "id": "c1",
         "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "cold"}])",
             kTools, {{"reasoning_effort", "high"}, {"model_identity", "You are a test model."}}),
      testing::read_chat_fixture("gpt-oss-analysis.txt"));
}

}  // namespace
}  // namespace kvforge
