// What a request asks its output to follow, before compiling: a GBNF text, a
// JSON schema (as JSON text), or any JSON object. `source` names where it
// came from (a request field, a CLI flag) for error messages.
#pragma once

#include <string>

namespace kvforge {

struct ConstraintSpec {
  enum class Kind { Gbnf, JsonSchema, JsonObject };
  Kind kind = Kind::Gbnf;
  std::string text;    // GBNF or schema JSON; empty for JsonObject
  std::string source;  // "response_format", "grammar", "--json-schema", ...
};

}  // namespace kvforge
