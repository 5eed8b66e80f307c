#include "app/chat/tool_call_syntax.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "app/chat/chat_template.h"
#include "testdata.h"

namespace kvforge {
namespace tool_syntax_test {

using nlohmann::ordered_json;

ChatTemplate load(const std::string& name) {
  std::ifstream in(testing::testdata("chat-templates/" + name), std::ios::binary);
  EXPECT_TRUE(in) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ChatTemplate::parse(ss.str());
}

const ordered_json kTools = ordered_json::parse(
    R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}])");

// A call and its result, as OpenAI's API sends them (arguments as JSON text).
ordered_json history() {
  return ordered_json::parse(R"([
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}])");
}

TEST(ToolCallSyntax, StyleFromTheTemplate) {
  EXPECT_EQ(detect_tool_call_style(load("Qwen-Qwen2.5-7B-Instruct.jinja")), ToolCallStyle::kHermes);
  EXPECT_EQ(detect_tool_call_style(load("meta-llama-Llama-3.1-8B-Instruct.jinja")),
            ToolCallStyle::kLlama3);
  EXPECT_EQ(detect_tool_call_style(load("meta-llama-Llama-3.2-3B-Instruct.jinja")),
            ToolCallStyle::kLlama3);
  EXPECT_EQ(detect_tool_call_style(load("google-gemma-2-2b-it.jinja")), ToolCallStyle::kGeneric);
  EXPECT_EQ(detect_tool_call_style(ChatTemplate::fallback()), ToolCallStyle::kGeneric);
}

TEST(ToolCallSyntax, MistralNemoRendersHistoryWithNineCharacterIds) {
  const ChatTemplate nemo = load("mistralai-Mistral-Nemo-Instruct-2407.jinja");
  ASSERT_EQ(detect_tool_call_style(nemo), ToolCallStyle::kMistral);
  const TemplateConversation conv =
      conversation_for_template(ToolCallStyle::kMistral, ToolTurns::kAsSent, history(), kTools);
  ChatTemplateInputs in;
  in.messages = conv.messages;
  in.tools = conv.tools;
  const std::string text = nemo.render(in);  // "call_1" would be refused by the template
  const std::string id = conv.messages[1]["tool_calls"][0]["id"];
  EXPECT_EQ(id.size(), 9u);
  EXPECT_EQ(conv.messages[2]["tool_call_id"], id);
  EXPECT_NE(text.find("[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                      "\"Paris\"}, \"id\": \"" +
                      id + "\"}]"),
            std::string::npos)
      << text;
}

TEST(ToolCallSyntax, GptOssIsHarmony) {
  std::ifstream in(testing::source_dir() / "tests/app/chat/data/openai-gpt-oss-120b.jinja",
                   std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const ChatTemplate gpt_oss = ChatTemplate::parse(ss.str());
  EXPECT_TRUE(is_harmony_template(gpt_oss));
  EXPECT_EQ(detect_tool_call_style(gpt_oss), ToolCallStyle::kHarmony);
  EXPECT_FALSE(is_harmony_template(ChatTemplate::fallback()));
}

TEST(ToolCallSyntax, QwenRendersCallsWithObjectArguments) {
  const TemplateConversation conv =
      conversation_for_template(ToolCallStyle::kHermes, ToolTurns::kAsSent, history(), kTools);
  ChatTemplateInputs in;
  in.messages = conv.messages;
  in.tools = conv.tools;
  const std::string text = load("Qwen-Qwen2.5-7B-Instruct.jinja").render(in);
  EXPECT_NE(text.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                      "\"Paris\"}}\n</tool_call>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("<tool_response>\n21 C\n</tool_response>"), std::string::npos) << text;
  EXPECT_NE(text.find("\"name\": \"get_weather\""), std::string::npos);
}

TEST(ToolCallSyntax, LlamaRendersTheCallWithParameters) {
  const TemplateConversation conv =
      conversation_for_template(ToolCallStyle::kLlama3, ToolTurns::kAsSent, history(), kTools);
  ChatTemplateInputs in;
  in.messages = conv.messages;
  in.tools = conv.tools;
  const std::string text = load("meta-llama-Llama-3.1-8B-Instruct.jinja").render(in);
  EXPECT_NE(text.find("{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"),
            std::string::npos)
      << text;
}

TEST(ToolCallSyntax, GenericDescribesToolsAndRewritesToolTurns) {
  const TemplateConversation conv =
      conversation_for_template(ToolCallStyle::kGeneric, ToolTurns::kAsSent, history(), kTools);
  EXPECT_TRUE(conv.tools.is_null());
  ASSERT_EQ(conv.messages.size(), 4u);
  EXPECT_EQ(conv.messages[0]["role"], "system");
  EXPECT_NE(conv.messages[0]["content"].get<std::string>().find("\"get_weather\""),
            std::string::npos);
  EXPECT_EQ(conv.messages[2]["content"],
            R"({"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris"}}]})");
  EXPECT_EQ(conv.messages[3]["role"], "user");
  EXPECT_EQ(ordered_json::parse(
                conv.messages[3]["content"].get<std::string>())["tool_response"]["content"],
            "21 C");
  // Rendered by a template that knows no tools.
  ChatTemplateInputs in;
  in.messages = conv.messages;
  EXPECT_NE(ChatTemplate::fallback().render(in).find("System: You can call tools"),
            std::string::npos);
  // No tools (tool_choice "none"): history rewritten, no system message added.
  EXPECT_EQ(
      conversation_for_template(ToolCallStyle::kGeneric, ToolTurns::kAsSent, history(), nullptr)
          .messages.size(),
      3u);
}

}  // namespace tool_syntax_test
}  // namespace kvforge
