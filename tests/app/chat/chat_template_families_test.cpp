// The seven real chat templates in ../shared/testdata/chat-templates render
// conversations to the exact text transformers' apply_chat_template gives.
// Expected strings were worked out by hand from each template's source
// (trim_blocks + lstrip_blocks, as Hugging Face renders them), not by running
// our renderer.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "app/chat/chat_template.h"
#include "testdata.h"

namespace kvforge {
namespace {

using nlohmann::ordered_json;

ChatTemplate load(const std::string& name) {
  std::ifstream in(testing::testdata("chat-templates/" + name), std::ios::binary);
  EXPECT_TRUE(in) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ChatTemplate::parse(ss.str());
}

ordered_json msg(const char* role, const char* content) {
  return ordered_json{{"role", role}, {"content", content}};
}

// system, user, assistant, user.
ordered_json four_turns() {
  return ordered_json::array({msg("system", "You are a helpful assistant."), msg("user", "Hello!"),
                              msg("assistant", "Hi there."), msg("user", "What is 2+2?")});
}

ordered_json three_turns() {
  return ordered_json::array(
      {msg("user", "Hello!"), msg("assistant", "Hi there."), msg("user", "What is 2+2?")});
}

std::tm fixed_date(int year, int month, int day) {
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = 12;
  return tm;
}

ChatTemplateInputs inputs(ordered_json messages, const char* bos, const char* eos,
                          bool add_generation_prompt = true) {
  ChatTemplateInputs in;
  in.messages = std::move(messages);
  in.bos_token = bos;
  in.eos_token = eos;
  in.add_generation_prompt = add_generation_prompt;
  in.now = [] { return fixed_date(2024, 12, 5); };
  return in;
}

TEST(ChatTemplateFamilies, Llama31) {
  KVFORGE_REQUIRE_TESTDATA();
  const ChatTemplate t = load("meta-llama-Llama-3.1-8B-Instruct.jinja");
  const std::string head =
      "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
      "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n";
  EXPECT_EQ(t.render(inputs(four_turns(), "<|begin_of_text|>", "<|eot_id|>")),
            head +
                "You are a helpful assistant.<|eot_id|>"
                "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
                "<|start_header_id|>assistant<|end_header_id|>\n\nHi there.<|eot_id|>"
                "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
                "<|start_header_id|>assistant<|end_header_id|>\n\n");
  // No system message: an empty one; no generation prompt: ends after the last turn.
  // Contents are trimmed.
  ordered_json m = ordered_json::array({msg("user", "  Hello!\n")});
  EXPECT_EQ(t.render(inputs(m, "<|begin_of_text|>", "<|eot_id|>", false)),
            head + "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>");
}

TEST(ChatTemplateFamilies, Llama32UsesStrftimeNow) {
  KVFORGE_REQUIRE_TESTDATA();
  const ChatTemplate t = load("meta-llama-Llama-3.2-3B-Instruct.jinja");
  EXPECT_EQ(t.render(inputs(four_turns(), "<|begin_of_text|>", "<|eot_id|>")),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
            "Cutting Knowledge Date: December 2023\nToday Date: 05 Dec 2024\n\n"
            "You are a helpful assistant.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHi there.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateFamilies, Llama31ToolsInFirstUserMessage) {
  KVFORGE_REQUIRE_TESTDATA();
  const ChatTemplate t = load("meta-llama-Llama-3.1-8B-Instruct.jinja");
  ChatTemplateInputs in = inputs(ordered_json::array({msg("user", "Weather in Paris?")}),
                                 "<|begin_of_text|>", "<|eot_id|>");
  in.tools = ordered_json::parse(R"([{"name": "get_weather", "parameters": {"city": "string"}}])");
  EXPECT_EQ(t.render(in),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
            "Environment: ipython\n"
            "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\n"
            "Given the following functions, please respond with a JSON for a function call "
            "with its proper arguments that best answers the given prompt.\n\n"
            "Respond in the format {\"name\": function name, \"parameters\": dictionary of "
            "argument name and its value}.Do not use variables.\n\n"
            "{\n    \"name\": \"get_weather\",\n    \"parameters\": {\n        \"city\": "
            "\"string\"\n    }\n}\n\n"
            "Weather in Paris?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateFamilies, Qwen25) {
  KVFORGE_REQUIRE_TESTDATA();
  const ChatTemplate t = load("Qwen-Qwen2.5-7B-Instruct.jinja");
  EXPECT_EQ(t.render(inputs(four_turns(), "", "<|im_end|>")),
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHello!<|im_end|>\n"
            "<|im_start|>assistant\nHi there.<|im_end|>\n"
            "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(t.render(inputs(three_turns(), "", "<|im_end|>", false)),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
            "assistant.<|im_end|>\n"
            "<|im_start|>user\nHello!<|im_end|>\n"
            "<|im_start|>assistant\nHi there.<|im_end|>\n"
            "<|im_start|>user\nWhat is 2+2?<|im_end|>\n");
}

TEST(ChatTemplateFamilies, Qwen25ToolsAndToolCalls) {
  KVFORGE_REQUIRE_TESTDATA();
  const ChatTemplate t = load("Qwen-Qwen2.5-7B-Instruct.jinja");
  ordered_json m = ordered_json::array({msg("user", "Weather in Paris?")});
  m.push_back(ordered_json::parse(
      R"({"role": "assistant", "content": "", "tool_calls": [{"type": "function",
          "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]})"));
  m.push_back(msg("tool", "22C"));
  ChatTemplateInputs in = inputs(m, "", "<|im_end|>");
  in.tools = ordered_json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "description": "Get weather", "parameters": {"type": "object", "properties":
      {"city": {"type": "string"}}, "required": ["city"]}}}])");
  EXPECT_EQ(
      t.render(in),
      "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant."
      "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
      "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
      "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": "
      "\"Get weather\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": "
      "{\"type\": \"string\"}}, \"required\": [\"city\"]}}}\n</tools>\n\n"
      "For each function call, return a json object with function name and arguments within "
      "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
      "\"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
      "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
      "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
      "{\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n"
      "<|im_start|>user\n<tool_response>\n22C\n</tool_response><|im_end|>\n"
      "<|im_start|>assistant\n");
}

TEST(ChatTemplateFamilies, Gemma2) {
  KVFORGE_REQUIRE_TESTDATA();
  const ChatTemplate t = load("google-gemma-2-2b-it.jinja");
  ordered_json m = three_turns();
  m[0]["content"] = "  Hello!\n";  // trimmed
  EXPECT_EQ(t.render(inputs(m, "<bos>", "<eos>")),
            "<bos><start_of_turn>user\nHello!<end_of_turn>\n"
            "<start_of_turn>model\nHi there.<end_of_turn>\n"
            "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n"
            "<start_of_turn>model\n");
  EXPECT_EQ(t.render(inputs(ordered_json::array({msg("user", "Hi")}), "<bos>", "<eos>", false)),
            "<bos><start_of_turn>user\nHi<end_of_turn>\n");
}

TEST(ChatTemplateFamilies, Gemma2RejectsSystemAndNonAlternatingRoles) {
  KVFORGE_REQUIRE_TESTDATA();
  const ChatTemplate t = load("google-gemma-2-2b-it.jinja");
  try {
    t.render(inputs(four_turns(), "<bos>", "<eos>"));
    FAIL() << "system message accepted";
  } catch (const TemplateRaised& e) {
    EXPECT_STREQ(e.what(), "System role not supported");
  }
  try {
    t.render(inputs(ordered_json::array({msg("user", "a"), msg("user", "b")}), "<bos>", "<eos>"));
    FAIL() << "user, user accepted";
  } catch (const TemplateRaised& e) {
    EXPECT_STREQ(e.what(), "Conversation roles must alternate user/assistant/user/assistant/...");
  }
}

TEST(ChatTemplateFamilies, Phi35) {
  KVFORGE_REQUIRE_TESTDATA();
  const ChatTemplate t = load("microsoft-Phi-3.5-mini-instruct.jinja");
  EXPECT_EQ(t.render(inputs(four_turns(), "<s>", "<|endoftext|>")),
            "<|system|>\nYou are a helpful assistant.<|end|>\n"
            "<|user|>\nHello!<|end|>\n"
            "<|assistant|>\nHi there.<|end|>\n"
            "<|user|>\nWhat is 2+2?<|end|>\n"
            "<|assistant|>\n");
  // No generation prompt: eos_token instead; an empty system message is skipped;
  // content is not trimmed.
  ordered_json m = ordered_json::array({msg("system", ""), msg("user", " Hi ")});
  EXPECT_EQ(t.render(inputs(m, "<s>", "<|endoftext|>", false)),
            "<|user|>\n Hi <|end|>\n<|endoftext|>");
}

TEST(ChatTemplateFamilies, MistralNemo) {
  KVFORGE_REQUIRE_TESTDATA();
  const ChatTemplate t = load("mistralai-Mistral-Nemo-Instruct-2407.jinja");
  // The system message goes into the last user turn; add_generation_prompt changes nothing.
  const std::string expected =
      "<s>[INST]Hello![/INST]Hi there.</s>"
      "[INST]You are a helpful assistant.\n\nWhat is 2+2?[/INST]";
  EXPECT_EQ(t.render(inputs(four_turns(), "<s>", "</s>")), expected);
  EXPECT_EQ(t.render(inputs(four_turns(), "<s>", "</s>", false)), expected);
  EXPECT_EQ(t.render(inputs(three_turns(), "<s>", "</s>")),
            "<s>[INST]Hello![/INST]Hi there.</s>[INST]What is 2+2?[/INST]");
}

TEST(ChatTemplateFamilies, MistralNemoToolsAndErrors) {
  KVFORGE_REQUIRE_TESTDATA();
  const ChatTemplate t = load("mistralai-Mistral-Nemo-Instruct-2407.jinja");
  ChatTemplateInputs in = inputs(ordered_json::array({msg("user", "Weather?")}), "<s>", "</s>");
  in.tools = ordered_json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "description": "Get weather", "parameters": {"type": "object"}, "return": "x"}}])");
  EXPECT_EQ(t.render(in),
            "<s>[AVAILABLE_TOOLS][{\"type\": \"function\", \"function\": {\"name\": "
            "\"get_weather\", \"description\": \"Get weather\", \"parameters\": "
            "{\"type\": \"object\"}}}][/AVAILABLE_TOOLS][INST]Weather?[/INST]");
  try {
    t.render(inputs(ordered_json::array({msg("assistant", "a")}), "<s>", "</s>"));
    FAIL() << "assistant first accepted";
  } catch (const TemplateRaised& e) {
    EXPECT_STREQ(e.what(),
                 "After the optional system message, conversation roles must alternate "
                 "user/assistant/user/assistant/...");
  }
  ordered_json bad_id = ordered_json::array({msg("user", "Weather?")});
  bad_id.push_back(ordered_json::parse(
      R"({"role": "assistant", "tool_calls": [{"id": "abc", "function": {"name": "f"}}]})"));
  EXPECT_THROW(t.render(inputs(bad_id, "<s>", "</s>")), TemplateRaised);
}

TEST(ChatTemplateFamilies, SmolLM3ThinkingModes) {
  KVFORGE_REQUIRE_TESTDATA();
  const ChatTemplate t = load("HuggingFaceTB-SmolLM3-3B.jinja");
  const std::string meta = "<|im_start|>system\n## Metadata\n\nKnowledge Cutoff Date: June 2025\n";
  EXPECT_EQ(t.render(inputs(four_turns(), "", "<|im_end|>")),
            meta +
                "Reasoning Mode: /think\n\n## Custom Instructions\n\n"
                "You are a helpful assistant.\n\n<|im_end|>\n"
                "<|im_start|>user\nHello!<|im_end|>\n"
                "<|im_start|>assistant\nHi there.<|im_end|>\n"
                "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
                "<|im_start|>assistant\n");
  // "/no_think" in the system message switches the mode and is cut out of the
  // instructions (the space after it stays); assistant text loses leading newlines.
  ordered_json m = ordered_json::array({msg("system", "/no_think You are terse.  "),
                                        msg("user", "Hi"), msg("assistant", "\n\nHello.")});
  EXPECT_EQ(t.render(inputs(m, "", "<|im_end|>")),
            meta +
                "Reasoning Mode: /no_think\n\n## Custom Instructions\n\n"
                " You are terse.\n\n<|im_end|>\n"
                "<|im_start|>user\nHi<|im_end|>\n"
                "<|im_start|>assistant\n<think>\n\n</think>\nHello.<|im_end|>\n"
                "<|im_start|>assistant\n<think>\n\n</think>\n");
  // enable_thinking=false as a template variable, no system message.
  ChatTemplateInputs in = inputs(ordered_json::array({msg("user", "Hi")}), "", "<|im_end|>");
  in.extra = {{"enable_thinking", false}};
  EXPECT_EQ(t.render(in), meta +
                              "Reasoning Mode: /no_think\n\n## Custom Instructions\n\n"
                              "You are a helpful AI assistant named SmolLM, trained by Hugging "
                              "Face.\n\n<|im_end|>\n"
                              "<|im_start|>user\nHi<|im_end|>\n"
                              "<|im_start|>assistant\n<think>\n\n</think>\n");
}

}  // namespace
}  // namespace kvforge
