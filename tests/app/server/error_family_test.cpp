// The error shape of a route's API family (error_family.h): what each
// family's clients read the message from.
#include "app/server/error_family.h"

#include <gtest/gtest.h>

namespace kvforge::server {
namespace {

TEST(ErrorFamily, ByPathAndItsQuery) {
  EXPECT_EQ(error_family("/v1/messages"), ErrorFamily::kAnthropic);
  EXPECT_EQ(error_family("/v1/messages/count_tokens"), ErrorFamily::kAnthropic);
  EXPECT_EQ(error_family("/v1/messages?beta=true"), ErrorFamily::kAnthropic);
  EXPECT_EQ(error_family("/api/chat"), ErrorFamily::kOllama);
  EXPECT_EQ(error_family("/api/pull?x=1"), ErrorFamily::kOllama);
  for (const char* path : {"/v1/chat/completions", "/v1/responses/resp_1", "/v1/messagesx",
                           "/v1/embeddings", "/api", "/apix/chat", "/", "", "/health?x=/api/"})
    EXPECT_EQ(error_family(path), ErrorFamily::kOpenAI) << path;
}

TEST(ErrorFamily, EachShapeCarriesTheMessage) {
  const ApiError e(413, "the request body exceeds 4096 bytes");
  const nlohmann::json openai = error_body(ErrorFamily::kOpenAI, e);
  EXPECT_EQ(openai["error"]["message"], "the request body exceeds 4096 bytes");
  EXPECT_EQ(openai["error"]["type"], "invalid_request_error");
  const nlohmann::json anthropic = error_body(ErrorFamily::kAnthropic, e);
  EXPECT_EQ(anthropic["type"], "error");
  EXPECT_EQ(anthropic["error"]["type"], "request_too_large");
  EXPECT_EQ(anthropic["error"]["message"], "the request body exceeds 4096 bytes");
  // Ollama's clients take "error" as the message itself: a string, never an object.
  EXPECT_EQ(error_body(ErrorFamily::kOllama, e),
            nlohmann::json({{"error", "the request body exceeds 4096 bytes"}}));
  const nlohmann::json busy =
      error_body(ErrorFamily::kAnthropic, ApiError(503, "too many open connections"));
  EXPECT_EQ(busy["error"]["type"], "overloaded_error");
}

}  // namespace
}  // namespace kvforge::server
