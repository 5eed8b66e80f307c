// llama-server's utility routes, in its request and response shapes, for
// tools written against llama-server:
//   POST /tokenize   {"content": string, "add_special"?: bool (false),
//                     "parse_special"?: bool (true), "with_pieces"?: bool (false)}
//                    -> {"tokens": [id...]} or, with pieces,
//                       {"tokens": [{"id": id, "piece": string | [byte...]}...]}
//                       (a piece that is not whole UTF-8 is its bytes)
//   POST /detokenize {"tokens": [id...]} -> {"content": string}
//   GET  /props      -> the model, its context, slots and chat template
//   GET  /slots      -> slots_route.h
// Errors are in the OpenAI shape, as llama-server's are.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "app/server/completion_service.h"
#include "app/server/server_props.h"

namespace kvforge::server {

// The routes' bodies in, their answers out (tokenize's as JSON text);
// ApiError 400 for a field of the wrong type or an id outside the vocabulary.
std::string tokenize_json(const Tokenizer& tok, const RequestLimits& limits, std::string_view body);
nlohmann::json detokenize_response(const Tokenizer& tok, const RequestLimits& limits,
                                   std::string_view body);
nlohmann::json props_response(const CompletionService& service, const ServerProps& props);

}  // namespace kvforge::server
