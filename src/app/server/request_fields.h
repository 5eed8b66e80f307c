// Which top-level fields of a completion or chat request kvforge serve takes.
// A field it does not implement would otherwise be ignored silently (a
// client sending llama.cpp's "grammar" would get unconstrained text back
// and never know); such requests get a 400 that names the field instead.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "app/server/openai_response.h"

namespace kvforge::server {

// Throws ApiError 400 (param = the field) for a field outside the ones kvforge
// implements or knowingly ignores (OpenAI's bookkeeping: user, store, metadata,
// service_tier). The tool fields are checked by tool_request.h.
void reject_unknown_fields(const nlohmann::ordered_json& body, ApiKind kind);
// The same for one top-level field, as the body is parsed.
void reject_unknown_field(const std::string& key, ApiKind kind);

}  // namespace kvforge::server
