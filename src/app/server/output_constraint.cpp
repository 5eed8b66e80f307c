#include "app/server/output_constraint.h"

#include <string>
#include <vector>

#include "app/server/openai_error.h"

namespace kvforge::server {
namespace {

using nlohmann::ordered_json;

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw ApiError(400, message, "invalid_request_error", param);
}

ConstraintSpec schema_spec(const ordered_json& schema, const std::string& source) {
  if (!schema.is_object() && !schema.is_boolean())
    bad(source, "'" + source + "' must be a JSON schema object");
  return {ConstraintSpec::Kind::JsonSchema, schema.dump(), source};
}

std::optional<ConstraintSpec> from_response_format(const ordered_json& f) {
  const auto type = f.is_object() ? f.find("type") : f.end();
  if (!f.is_object() || type == f.end() || !type->is_string())
    bad("response_format", "'response_format' must be an object with a string 'type'");
  const std::string t = type->get<std::string>();
  if (t == "text") return std::nullopt;
  if (t == "json_object") {
    if (f.contains("schema")) return schema_spec(f["schema"], "response_format.schema");
    return ConstraintSpec{ConstraintSpec::Kind::JsonObject, "", "response_format"};
  }
  if (t != "json_schema")
    bad("response_format", "'response_format' type '" + t +
                               "' is not supported; 'text', 'json_object' or 'json_schema'");
  const auto js = f.find("json_schema");
  if (js == f.end() || !js->is_object())
    bad("response_format", "'response_format.json_schema' must be an object");
  if (js->contains("strict") && !(*js)["strict"].is_boolean())
    bad("response_format", "'response_format.json_schema.strict' must be a boolean");
  // llama-server reads json_schema.schema; some clients send the schema itself.
  if (js->contains("schema"))
    return schema_spec((*js)["schema"], "response_format.json_schema.schema");
  bad("response_format", "'response_format.json_schema.schema' is required");
}

}  // namespace

std::optional<ConstraintSpec> parse_output_constraint(const ordered_json& body) {
  std::vector<ConstraintSpec> specs;
  if (const auto f = body.find("response_format"); f != body.end() && !f->is_null())
    if (auto s = from_response_format(*f)) specs.push_back(*s);
  if (const auto g = body.find("grammar"); g != body.end() && !g->is_null()) {
    if (!g->is_string()) bad("grammar", "'grammar' must be a GBNF string");
    if (!g->get<std::string>().empty())
      specs.push_back({ConstraintSpec::Kind::Gbnf, g->get<std::string>(), "grammar"});
  }
  if (const auto j = body.find("json_schema"); j != body.end() && !j->is_null())
    specs.push_back(schema_spec(*j, "json_schema"));
  if (specs.size() > 1)
    bad(specs[1].source,
        "only one of response_format, grammar and json_schema may constrain "
        "the output");
  if (specs.empty()) return std::nullopt;
  return specs[0];
}

}  // namespace kvforge::server
