// The output constraint of a completion or chat request, from OpenAI's
// response_format ({"type": "text" | "json_object" | "json_schema"}, with
// json_schema.schema and json_schema.strict; llama-server's json_object with
// a "schema" too) or llama-server's "grammar" (GBNF text) and "json_schema"
// (a schema object) fields. At most one of them may constrain a request.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "app/structured/constraint_spec.h"

namespace kvforge::server {

// Throws ApiError 400 naming the field for a malformed or conflicting one.
std::optional<ConstraintSpec> parse_output_constraint(const nlohmann::ordered_json& body);

}  // namespace kvforge::server
