// Fuzz target for the OpenAI request layer: any byte string as the body of
// POST /v1/completions (first byte even) or /v1/chat/completions (odd) must
// parse into a request or throw ApiError with a 4xx status; a chat request
// that parses then renders through the fallback chat template, which may only
// refuse it with TemplateError, TemplateRaised or std::invalid_argument.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "app/chat/chat_template.h"
#include "app/server/openai_error.h"
#include "app/server/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvforge;
  using namespace kvforge::server;
  if (size == 0) return 0;
  static const ChatTemplate fallback = ChatTemplate::fallback();
  RequestLimits limits;
  limits.max_tokens_limit = 256;
  const bool chat = data[0] % 2 == 1;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    const nlohmann::ordered_json json = parse_json_body(body, limits);
    if (!chat) {
      (void)parse_completion_request(json, limits);
      return 0;
    }
    const ChatRequest r = parse_chat_request(json, limits);
    ChatTemplateInputs in;
    in.messages = r.messages;
    in.tools = r.tools;
    in.extra = r.template_kwargs;
    try {
      (void)fallback.render(in);
    } catch (const TemplateError&) {
    } catch (const TemplateRaised&) {
    } catch (const std::invalid_argument&) {
    }
  } catch (const ApiError& e) {
    if (e.status() < 400 || e.status() >= 500) std::abort();
  }
  return 0;
}
