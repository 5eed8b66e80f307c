// Parsing and validation of OpenAI request bodies: good requests map onto
// SamplingParams; each bad one is a 400 naming the problem.
#include "app/server/openai_request.h"

#include <gtest/gtest.h>

#include "app/server/openai_error.h"

namespace kvforge::server {
namespace {

RequestLimits limits() {
  RequestLimits l;
  l.model_ids = {"kvforge-kjv-4m"};
  l.max_n = 4;
  l.max_tokens_limit = 256;
  l.max_messages = 8;
  l.max_prompt_bytes = 1000;
  return l;
}

CompletionRequest completion(const std::string& body) {
  return parse_completion_request(parse_json_body(body, limits()), limits());
}
ChatRequest chat(const std::string& body) {
  return parse_chat_request(parse_json_body(body, limits()), limits());
}

TEST(OpenAiRequest, CompletionMapsEveryField) {
  const CompletionRequest r = completion(R"({"model": "kvforge-kjv-4m", "prompt": "In the",
      "max_tokens": 20, "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05,
      "seed": 7, "stop": ["\n", "Amen"], "n": 2, "presence_penalty": 0.5,
      "frequency_penalty": -0.5, "logprobs": 3, "stream": true,
      "stream_options": {"include_usage": true}, "user": "ignored"})");
  EXPECT_EQ(r.model, "kvforge-kjv-4m");
  ASSERT_TRUE(r.prompt_text);
  EXPECT_EQ(*r.prompt_text, "In the");
  EXPECT_EQ(r.sampling.max_tokens, 20);
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 0.9f);
  EXPECT_EQ(r.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(r.sampling.min_p, 0.05f);
  EXPECT_EQ(r.sampling.seed, 7u);
  EXPECT_EQ(r.sampling.stop, (std::vector<std::string>{"\n", "Amen"}));
  EXPECT_EQ(r.n, 2);
  EXPECT_FLOAT_EQ(r.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.frequency_penalty, -0.5f);
  EXPECT_EQ(r.sampling.penalty_last_n, -1);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 3);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
}

TEST(OpenAiRequest, CompletionDefaultsAndTokenPrompts) {
  const CompletionRequest r = completion(R"({"prompt": [1, 42, 7]})");
  EXPECT_EQ(r.model, "kvforge-kjv-4m");  // the served model when omitted
  EXPECT_FALSE(r.prompt_text);
  EXPECT_EQ(r.prompt_tokens, (std::vector<int32_t>{1, 42, 7}));
  EXPECT_EQ(r.sampling.max_tokens, 16);  // OpenAI's completions default
  EXPECT_FLOAT_EQ(r.sampling.temperature, 1.0f);
  EXPECT_FALSE(r.sampling.seed);
  EXPECT_EQ(r.n, 1);
  EXPECT_FALSE(r.stream);
  EXPECT_EQ(completion(R"({"prompt": ["one"], "stop": "x", "top_k": -1})").sampling.top_k, 0);
  EXPECT_EQ(completion(R"({"prompt": [[5, 6]]})").prompt_tokens, (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(completion(R"({"prompt": "a", "max_tokens": null})").sampling.max_tokens, 16);
}

TEST(OpenAiRequest, ChatNormalizesMessages) {
  const ChatRequest r = chat(R"({"model": "kvforge-kjv-4m", "messages": [
      {"role": "developer", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}]},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "1"}]},
      {"role": "tool", "content": "42", "tool_call_id": "1"}],
      "max_completion_tokens": 5, "logprobs": true, "top_logprobs": 2,
      "chat_template_kwargs": {"enable_thinking": false}})");
  EXPECT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[1]["content"], "Hi\nthere");
  EXPECT_TRUE(r.messages[2]["content"].is_null());
  EXPECT_EQ(r.messages[2]["tool_calls"][0]["id"], "1");
  EXPECT_EQ(r.messages[3]["tool_call_id"], "1");
  EXPECT_EQ(r.sampling.max_tokens, 5);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 2);
  EXPECT_EQ(r.template_kwargs["enable_thinking"], false);
  // Chat has no default max_tokens: until EOS or the context is full.
  EXPECT_FALSE(chat(R"({"messages": [{"role": "user", "content": "x"}]})").sampling.max_tokens);
  EXPECT_EQ(chat(R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 9})")
                .sampling.max_tokens,
            9);
}

struct BadCase {
  const char* what;
  bool is_chat;
  std::string body;
  std::string message_part;  // must appear in the error message
};

TEST(OpenAiRequest, BadInputsAre400WithAReason) {
  const std::string invalid_utf8 = std::string(R"({"prompt": "ab)") + "\xC3\x28" + R"("})";
  std::string many_stops = R"({"prompt": "x", "stop": [)";
  for (int i = 0; i < 33; ++i) many_stops += (i ? ",\"" : "\"") + std::to_string(i) + "\"";
  many_stops += "]}";
  const std::string utf8_offset = std::to_string(invalid_utf8.find('\xC3'));
  const std::string deep =
      R"({"prompt": "x", "a": )" + std::string(40, '[') + std::string(40, ']') + "}";
  const std::vector<BadCase> cases = {
      {"empty body", false, "", "request body is empty"},
      {"malformed JSON", false, R"({"prompt": "x",})", "not valid JSON"},
      {"truncated JSON", false, R"({"prompt": "x")", "not valid JSON"},
      {"not an object", false, R"(["prompt"])", "must be a JSON object, got array"},
      {"invalid UTF-8", false, invalid_utf8,
       "not valid UTF-8 (ill-formed byte at offset " + utf8_offset + ")"},
      {"lone surrogate escape", false, R"({"prompt": "\ud800"})", "not valid JSON"},
      {"too deep", false, deep, "nested deeper than 32 levels"},
      {"model wrong type", false, R"({"model": 3, "prompt": "x"})",
       "'model' must be a string, got integer"},
      {"missing prompt", false, R"({"max_tokens": 3})", "'prompt' is required"},
      {"prompt wrong type", false, R"({"prompt": {"a": 1}})",
       "'prompt' must be a string or an array of token ids, got object"},
      {"prompt empty array", false, R"({"prompt": []})", "must not be an empty array"},
      {"batched prompts", false, R"({"prompt": ["a", "b"]})",
       "batched prompts (2) are not supported"},
      {"negative token id", false, R"({"prompt": [1, -5]})",
       "token ids must be non-negative integers, found -5"},
      {"float token id", false, R"({"prompt": [1, 2.5]})", "found 2.5"},
      {"max_tokens zero", false, R"({"prompt": "x", "max_tokens": 0})",
       "'max_tokens' must be at least 1, got 0"},
      {"max_tokens negative", false, R"({"prompt": "x", "max_tokens": -3})", "at least 1, got -3"},
      {"max_tokens absurd", false, R"({"prompt": "x", "max_tokens": 1000000000000})",
       "'max_tokens' must be at most 256 (the context size)"},
      {"max_tokens string", false, R"({"prompt": "x", "max_tokens": "10"})",
       "'max_tokens' must be an integer, got string"},
      {"max_tokens float", false, R"({"prompt": "x", "max_tokens": 1.5})",
       "must be an integer, got number"},
      {"temperature too high", false, R"({"prompt": "x", "temperature": 2.5})",
       "'temperature' must be in [0, 2], got 2.5"},
      {"temperature negative", false, R"({"prompt": "x", "temperature": -0.1})",
       "'temperature' must be in [0, 2]"},
      {"temperature string", false, R"({"prompt": "x", "temperature": "hot"})",
       "'temperature' must be a number, got string"},
      {"top_p zero", false, R"({"prompt": "x", "top_p": 0})", "'top_p' must be in (0, 1], got 0"},
      {"top_k float", false, R"({"prompt": "x", "top_k": 0.5})", "'top_k' must be an integer"},
      {"min_p above 1", false, R"({"prompt": "x", "min_p": 1.5})", "'min_p' must be in [0, 1]"},
      {"presence_penalty range", false, R"({"prompt": "x", "presence_penalty": 3})",
       "'presence_penalty' must be in [-2, 2], got 3"},
      {"frequency_penalty type", false, R"({"prompt": "x", "frequency_penalty": true})",
       "'frequency_penalty' must be a number, got boolean"},
      {"n zero", false, R"({"prompt": "x", "n": 0})", "'n' must be at least 1, got 0"},
      {"n too large", false, R"({"prompt": "x", "n": 5})", "'n' must be at most 4, got 5"},
      {"seed string", false, R"({"prompt": "x", "seed": "42"})",
       "'seed' must be an integer, got string"},
      {"stop wrong type", false, R"({"prompt": "x", "stop": 5})",
       "'stop' must be a string or an array of strings, got integer"},
      {"stop empty string", false, R"({"prompt": "x", "stop": [""]})",
       "'stop' strings must not be empty"},
      {"stop non-string element", false, R"({"prompt": "x", "stop": ["a", 1]})",
       "found integer in the array"},
      {"stop too many", false, many_stops, "at most 32 strings, got 33"},
      {"stop too long", false, R"({"prompt": "x", "stop": ")" + std::string(300, 'z') + R"("})",
       "at most 256 bytes"},
      {"stream not bool", false, R"({"prompt": "x", "stream": "yes"})",
       "'stream' must be a boolean, got string"},
      {"stream_options without stream", false,
       R"({"prompt": "x", "stream_options": {"include_usage": true}})",
       "only allowed when 'stream' is true"},
      {"logprobs out of range", false, R"({"prompt": "x", "logprobs": 9})",
       "'logprobs' must be an integer in [0, 5]"},
      {"echo", false, R"({"prompt": "x", "echo": true})", "'echo' is not supported"},
      {"best_of", false, R"({"prompt": "x", "best_of": 3})", "'best_of' must equal 'n' (1)"},
      {"logit_bias", false, R"({"prompt": "x", "logit_bias": {"5": 100}})",
       "'logit_bias' is not supported"},
      {"response_format unknown type", false,
       R"({"prompt": "x", "response_format": {"type": "xml"}})", "type 'xml' is not supported"},
      {"response_format json_schema without schema", false,
       R"({"prompt": "x", "response_format": {"type": "json_schema", "json_schema": {}}})",
       "'response_format.json_schema.schema' is required"},
      {"grammar and json_schema together", false,
       R"({"prompt": "x", "grammar": "root ::= \"a\"", "json_schema": {}})",
       "only one of response_format, grammar and json_schema"},
      {"missing messages", true, R"({"model": "kvforge-kjv-4m"})", "'messages' is required"},
      {"messages not array", true, R"({"messages": "hi"})",
       "'messages' must be an array, got string"},
      {"messages empty", true, R"({"messages": []})", "'messages' must not be empty"},
      {"too many messages", true,
       R"({"messages": [)" + std::string(R"({"role":"user","content":"a"},)") +
           R"({"role":"user","content":"a"},{"role":"user","content":"a"},{"role":"user","content":"a"},{"role":"user","content":"a"},{"role":"user","content":"a"},{"role":"user","content":"a"},{"role":"user","content":"a"},{"role":"user","content":"a"}]})",
       "at most 8 messages, got 9"},
      {"message not object", true, R"({"messages": ["hi"]})",
       "'messages[0]' must be an object, got string"},
      {"missing role", true, R"({"messages": [{"content": "hi"}]})",
       "'messages[0].role' is required"},
      {"unknown role", true, R"({"messages": [{"role": "wizard", "content": "hi"}]})",
       "got 'wizard'"},
      {"missing user content", true, R"({"messages": [{"role": "user"}]})",
       "'messages[0].content' is required for role 'user'"},
      {"content wrong type", true, R"({"messages": [{"role": "user", "content": 5}]})",
       "must be a string or an array of text parts, got integer"},
      {"image part", true,
       R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]})",
       "only 'text' content parts are supported, got 'image_url'"},
      {"prompt too long", true,
       R"({"messages": [{"role": "user", "content": ")" + std::string(1200, 'a') + R"("}]})",
       "longer than 1000 bytes"},
      {"top_logprobs without logprobs", true,
       R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})",
       "'top_logprobs' requires 'logprobs' to be true"},
      {"top_logprobs too many", true,
       R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21})",
       "'top_logprobs' must be at most 20"},
      {"max_completion_tokens zero", true,
       R"({"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": 0})",
       "'max_completion_tokens' must be at least 1"},
      {"tools not array", true, R"({"messages": [{"role": "user", "content": "x"}], "tools": {}})",
       "'tools' must be an array, got object"},
  };
  ASSERT_GE(cases.size(), 25u);
  for (const BadCase& c : cases) {
    try {
      if (c.is_chat)
        chat(c.body);
      else
        completion(c.body);
      ADD_FAILURE() << c.what << ": accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400) << c.what;
      EXPECT_EQ(e.type(), "invalid_request_error") << c.what;
      EXPECT_NE(std::string(e.what()).find(c.message_part), std::string::npos)
          << c.what << ": got \"" << e.what() << "\", expected it to contain \"" << c.message_part
          << "\"";
    }
  }
}

// OpenAI and vLLM answer an unknown model 404 (the SDKs' NotFoundError), not 400.
TEST(OpenAiRequest, UnknownModelIs404ModelNotFound) {
  for (const bool is_chat : {false, true}) {
    try {
      if (is_chat)
        chat(R"({"model": "gpt-4", "messages": [{"role": "user", "content": "x"}]})");
      else
        completion(R"({"model": "gpt-4", "prompt": "x"})");
      ADD_FAILURE() << "accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 404);
      EXPECT_EQ(e.code(), "model_not_found");
      EXPECT_NE(std::string(e.what()).find("The model 'gpt-4' does not exist"), std::string::npos);
    }
  }
}

TEST(OpenAiRequest, ErrorJsonShape) {
  try {
    completion(R"({"model": "gpt-4", "prompt": "x"})");
    FAIL();
  } catch (const ApiError& e) {
    const nlohmann::json j = e.to_json();
    EXPECT_EQ(j["error"]["message"], e.what());
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
    EXPECT_EQ(j["error"]["param"], "model");
    EXPECT_EQ(j["error"]["code"], "model_not_found");
  }
  const nlohmann::json j = ApiError(429, "busy", "rate_limit_error").to_json();
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_TRUE(j["error"]["code"].is_null());
}

}  // namespace
}  // namespace kvforge::server
