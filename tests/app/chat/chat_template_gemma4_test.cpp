// Gemma 4's chat template (data/gemma-4-vocab.jinja: the tokenizer.chat_template
// of llama.cpp's models/ggml-vocab-gemma-4.gguf) renders through our Jinja
// engine to the exact text llama.cpp renders.
//
// Expected texts (data/gemma-4-*.txt) are llama-server's /apply-template
// output (peer llama.cpp de3ff815, `llama-server --jinja` on a random-weight
// file carrying that vocabulary and template) on 2026-12-07. llama.cpp drops
// the leading <bos> from the prompt (it adds the token when tokenizing), so
// the expectations here are "<bos>" + that text. It also rewrites an
// assistant tool call, the `tool` messages answering it and the assistant's
// reply into one assistant message with `tool_responses` (the field this
// template reads) and parses the call's arguments into an object; the tools
// conversation below is written in that rewritten form.
#include <gtest/gtest.h>

#include "app/chat/chat_template.h"
#include "chat_fixture.h"

namespace kvforge {
namespace {

using nlohmann::ordered_json;

std::string render_gemma4(const char* messages, bool enable_thinking, const char* tools = "null") {
  const ChatTemplate t = ChatTemplate::parse(testing::read_chat_fixture("gemma-4-vocab.jinja"));
  ChatTemplateInputs in;
  in.messages = ordered_json::parse(messages);
  in.tools = ordered_json::parse(tools);
  in.bos_token = "<bos>";
  in.eos_token = "<eos>";
  in.extra = {{"enable_thinking", enable_thinking}};
  return t.render(in);
}

// A system turn, a finished exchange, and the generation prompt with an
// empty thought channel (thinking off); the user's spaces trimmed.
TEST(ChatTemplateGemma4, SystemUserAssistant) {
  EXPECT_EQ(render_gemma4(R"([{"role": "system", "content": "You are a helpful assistant."},
                       {"role": "user", "content": "Hello!"},
                       {"role": "assistant", "content": "Hi, how can I help?"},
                       {"role": "user", "content": "  What is 2+2?  "}])",
                          false),
            "<bos>" + testing::read_chat_fixture("gemma-4-plain.txt"));
}

TEST(ChatTemplateGemma4, NoSystemTurn) {
  EXPECT_EQ(render_gemma4(R"([{"role": "user", "content": "Hi"}])", false),
            "<bos>" + testing::read_chat_fixture("gemma-4-nosystem.txt"));
}

// Thinking on: <|think|> opens a system turn, and an earlier answer's
// thought channel is stripped from the history.
TEST(ChatTemplateGemma4, ThinkingStripsEarlierThoughts) {
  EXPECT_EQ(render_gemma4(R"([{"role": "user", "content": "Hi"},
                       {"role": "assistant", "content": "<|channel>thought\nplan<channel|>Hello."},
                       {"role": "user", "content": "Again"}])",
                          true),
            "<bos>" + testing::read_chat_fixture("gemma-4-thinking.txt"));
}

// Tool declarations in the system turn, a call with its response and the
// answer in one model turn.
TEST(ChatTemplateGemma4, ToolsCallsAndResponses) {
  constexpr const char* kTools = R"([{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather of a city",
    "parameters": {"type": "object", "properties": {
      "city": {"type": "string", "description": "The city"},
      "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}])";
  EXPECT_EQ(render_gemma4(R"([{"role": "system", "content": "Use tools."},
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "tool_calls": [{"type": "function", "id": "c1",
        "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}}],
       "tool_responses": [{"name": "get_weather", "response": {"temp": 21, "sky": "clear"}}],
       "content": "It is 21 C and clear."},
      {"role": "user", "content": "Thanks"}])",
                          false, kTools),
            "<bos>" + testing::read_chat_fixture("gemma-4-tools.txt"));
}

}  // namespace
}  // namespace kvforge
