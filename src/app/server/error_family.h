// The shape of an error follows the API family of its route, because each
// family's clients parse only their own: OpenAI's SDKs read
// {"error": {"message", ...}}, Anthropic's {"type": "error", "error": {"type",
// "message"}}, and Ollama's {"error": "<message>"} (an object there becomes
// "[object Object]"). The route handlers answer in their family's shape; this
// gives the same shape to what is answered before or beside them: no route,
// a body too large or too slow, a connection past the cap.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "app/server/openai_error.h"

namespace kvforge::server {

enum class ErrorFamily { kOpenAI, kAnthropic, kOllama };

// /v1/messages and below: Anthropic; /api/ and below: Ollama; anything else
// OpenAI. `target` may carry a query string.
ErrorFamily error_family(std::string_view target);

nlohmann::json error_body(ErrorFamily family, const ApiError& e);

}  // namespace kvforge::server
