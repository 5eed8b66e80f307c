// Fields of the API families beyond chat and completions (issue 41) that were
// accepted whatever their type, or without bound: each is now a 400 naming the
// field, and the values the APIs document still pass.
#include <gtest/gtest.h>

#include <string>

#include "app/server/embeddings_api.h"
#include "app/server/ollama_api.h"
#include "app/server/ollama_fields.h"
#include "app/server/openai_error.h"
#include "app/server/responses_api.h"

namespace kvforge::server {
namespace {

RequestLimits limits() {
  RequestLimits l;
  l.model_ids = {"m"};
  return l;
}

// The param of the ApiError `parse` throws; "" when it throws none.
template <typename Parse>
std::string refused_param(Parse parse) {
  try {
    parse();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400) << e.what();
    return e.param().value_or("(no param)");
  }
  return "";
}

TEST(OllamaFields, KeepAliveIsADurationOrSeconds) {
  using nlohmann::ordered_json;
  for (const char* ok : {R"({})", R"({"keep_alive":null})", R"({"keep_alive":"5m"})",
                         R"({"keep_alive":-1})", R"({"keep_alive":0.5})"})
    EXPECT_NO_THROW(check_ollama_keep_alive(ordered_json::parse(ok))) << ok;
  for (const char* bad :
       {R"({"keep_alive":true})", R"({"keep_alive":[1]})", R"({"keep_alive":{"s":1}})"})
    EXPECT_EQ(refused_param([&] { check_ollama_keep_alive(ordered_json::parse(bad)); }),
              "keep_alive")
        << bad;
}

TEST(OllamaFields, RuntimeOptionsHaveTheirTypes) {
  using nlohmann::ordered_json;
  EXPECT_TRUE(check_ollama_runtime_option("num_ctx", 4096));
  EXPECT_TRUE(check_ollama_runtime_option("use_mmap", false));
  EXPECT_TRUE(check_ollama_runtime_option("num_thread", nullptr));
  EXPECT_FALSE(check_ollama_runtime_option("temperature", 0.5));
  EXPECT_EQ(refused_param([] { check_ollama_runtime_option("num_ctx", "big"); }),
            "options.num_ctx");
  EXPECT_EQ(refused_param([] { check_ollama_runtime_option("num_ctx", 1.5); }), "options.num_ctx");
  EXPECT_EQ(refused_param([] { check_ollama_runtime_option("numa", 1); }), "options.numa");
}

// Each Ollama route with a body, by the route's path.
void parse_ollama(const std::string& route, const std::string& body) {
  const RequestLimits l = limits();
  if (route == "/api/chat") ollama_chat_request(body, l);
  if (route == "/api/generate") ollama_generate_request(body, l);
  if (route == "/api/embed") parse_ollama_embed(body, l, 8);
  if (route == "/api/embeddings") parse_ollama_embeddings(body, l);
  if (route == "/api/show") ollama_show(body, l, ServerProps{"/m.gguf", 1, "llama", 0, ""}, "");
}

TEST(OllamaFields, EveryRouteChecksItsFieldsTypes) {
  struct Case {
    const char* route;
    const char* body;
    const char* param;  // "" = accepted
  };
  const Case cases[] = {
      {"/api/chat", R"({"model":"m","messages":[],"keep_alive":true})", "keep_alive"},
      {"/api/generate", R"({"model":"m","prompt":"x","options":{"num_ctx":"x"}})",
       "options.num_ctx"},
      {"/api/embed", R"({"model":"m","input":"x","keep_alive":[1]})", "keep_alive"},
      // /api/embeddings ignored its options and keep_alive whatever they were.
      {"/api/embeddings", R"({"model":"m","prompt":"x","options":7})", "options"},
      {"/api/embeddings", R"({"model":"m","prompt":"x","options":{"top_k":1}})", "options.top_k"},
      {"/api/embeddings", R"({"model":"m","prompt":"x","keep_alive":true})", "keep_alive"},
      {"/api/embeddings", R"({"model":"m","prompt":"x","options":{"num_ctx":8},"keep_alive":"1m"})",
       ""},
      // A system of another type was dropped without a word; with raw it is not used, but
      // still the client's mistake.
      {"/api/generate", R"({"model":"m","prompt":"x","system":7})", "system"},
      {"/api/generate", R"({"model":"m","prompt":"x","raw":true,"system":[1]})", "system"},
      {"/api/show", R"({"model":"m","verbose":"yes"})", "verbose"},
      {"/api/show", R"({"model":"m","verbose":true})", ""},
  };
  for (const Case& c : cases)
    EXPECT_EQ(refused_param([&] { parse_ollama(c.route, c.body); }), c.param)
        << c.route << " " << c.body;
  const OllamaRequest r =
      ollama_generate_request(R"({"model":"m","prompt":"x","system":"be brief"})", limits());
  EXPECT_EQ(r.openai["messages"][0]["content"], "be brief");
}

TEST(ResponsesFields, UserIsAStringAndMetadataIsBounded) {
  const RequestLimits l = limits();
  auto parse = [&](const std::string& extra) {
    return [&l, body = R"({"model":"m","input":"x")" + extra + "}"] {
      parse_responses_request(body, l);
    };
  };
  EXPECT_EQ(refused_param(parse(R"(,"user":7)")), "user");
  EXPECT_EQ(refused_param(parse(R"(,"user":"u")")), "");
  EXPECT_EQ(refused_param(parse(R"(,"metadata":{"a":1})")), "metadata.a");
  std::string pairs;
  for (int i = 0; i < 17; ++i)
    pairs += (i ? "," : "") + std::string("\"k") + std::to_string(i) + "\":\"v\"";
  EXPECT_EQ(refused_param(parse(R"(,"metadata":{)" + pairs + "}")), "metadata");
  EXPECT_EQ(refused_param(parse(R"(,"metadata":{")" + std::string(65, 'k') + R"(":"v"})")),
            "metadata");
  EXPECT_EQ(refused_param(parse(R"(,"metadata":{"k":")" + std::string(513, 'v') + R"("})")),
            "metadata.k");
  // At the bounds, in characters: 64 two-byte characters make a 128-byte key.
  std::string wide_key;
  for (int i = 0; i < 64; ++i) wide_key += "\xC3\xA9";
  EXPECT_EQ(refused_param(
                parse(R"(,"metadata":{")" + wide_key + R"(":")" + std::string(512, 'v') + R"("})")),
            "");
}

TEST(OllamaParameterSizeTest, ShortensAsOllamaListsModels) {
  EXPECT_EQ(ollama_parameter_size(0), "");
  EXPECT_EQ(ollama_parameter_size(950), "950");
  EXPECT_EQ(ollama_parameter_size(4196608), "4.2M");
  EXPECT_EQ(ollama_parameter_size(7615616512), "7.6B");
  EXPECT_EQ(ollama_parameter_size(999960000), "1.0B");
  EXPECT_EQ(ollama_parameter_size(20914757184), "20.9B");
}

}  // namespace
}  // namespace kvforge::server
