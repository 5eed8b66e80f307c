// Fuzz target for the request bodies of the API families beyond chat and
// completions (issue 41): the first byte picks the parser, the rest is the
// body. Each must parse or throw ApiError with a 4xx status, nothing else.
//   0 POST /v1/embeddings   1 POST /api/embed   2 POST /api/embeddings
//   3 POST /v1/responses    4 POST /v1/messages 5 POST /v1/messages/count_tokens
//   6 POST /api/chat        7 POST /api/generate 8 POST /api/show
//   9 POST /slots/{id}?action=save|restore|erase: the body's first line is the
//     id, its second the action, the rest the JSON body (4 slots).
//  10 POST /tokenize       11 POST /detokenize (a SentencePiece vocabulary with
//     byte fallback and a control token)
//  12 GET /v1/models/{id}: the body is the id.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string_view>

#include "app/server/anthropic_api.h"
#include "app/server/embeddings_api.h"
#include "app/server/llama_routes.h"
#include "app/server/model_names.h"
#include "app/server/ollama_api.h"
#include "app/server/openai_error.h"
#include "app/server/responses_api.h"
#include "app/server/slot_actions.h"
#include "fuzz_vocabularies.h"

namespace {

// "<id>\n<action>\n<body>" → parse_slot_action over 4 entries.
void parse_slot_request(std::string_view b) {
  const size_t id_end = std::min(b.find('\n'), b.size());
  const std::string_view id = b.substr(0, id_end);
  b.remove_prefix(std::min(id_end + 1, b.size()));
  const size_t action_end = std::min(b.find('\n'), b.size());
  const std::string_view action = b.substr(0, action_end);
  b.remove_prefix(std::min(action_end + 1, b.size()));
  (void)kvforge::server::parse_slot_action(id, action, b, 4);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvforge::server;
  if (size == 0) return 0;
  RequestLimits limits;
  limits.model_ids = {"m"};
  limits.max_tokens_limit = 256;
  constexpr int kDims = 64;
  const std::function<void(std::string_view)> parsers[] = {
      [&](std::string_view b) { (void)parse_openai_embeddings(b, limits, kDims); },
      [&](std::string_view b) { (void)parse_ollama_embed(b, limits, kDims); },
      [&](std::string_view b) { (void)parse_ollama_embeddings(b, limits); },
      [&](std::string_view b) { (void)parse_responses_request(b, limits); },
      [&](std::string_view b) { (void)parse_messages_request(b, limits, false); },
      [&](std::string_view b) { (void)parse_messages_request(b, limits, true); },
      [&](std::string_view b) { (void)ollama_chat_request(b, limits); },
      [&](std::string_view b) { (void)ollama_generate_request(b, limits); },
      [&](std::string_view b) {
        (void)ollama_show(b, limits, ServerProps{"/m.gguf", 1, "llama", 0, ""}, "{{ messages }}");
      },
      parse_slot_request,
      [&](std::string_view b) { (void)tokenize_json(kvforge::fuzz::spm_with_bytes(), limits, b); },
      [&](std::string_view b) {
        (void)detokenize_response(kvforge::fuzz::spm_with_bytes(), limits, b);
      },
      [&](std::string_view b) { (void)model_info(limits, std::string(b), 0); },
  };
  constexpr size_t kParsers = sizeof(parsers) / sizeof(parsers[0]);
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    parsers[data[0] % kParsers](body);
  } catch (const ApiError& e) {
    if (e.status() < 400 || e.status() >= 500) std::abort();
  }
  return 0;
}
