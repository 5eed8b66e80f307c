// JSON Schema -> GBNF (the grammar engine in engine/sampling/grammar/ then
// compiles it): a reply that the grammar accepts is JSON that validates
// against the schema. Supported: type (and lists of types, `nullable`),
// properties, required, additionalProperties, items, prefixItems,
// minItems/maxItems, enum, const, anyOf/oneOf, allOf of objects,
// $ref into $defs/definitions (recursion included), string minLength/
// maxLength/pattern/format (date, time, date-time, uuid, email), integer and
// number minimum/maximum (exclusive too). Annotations (title, description,
// default, examples, ...) are ignored; any other keyword is a GrammarError
// naming it and where it is ("json_schema: unsupported keyword 'multipleOf'
// at #/properties/x").
//
// Where the schema leaves a choice open the grammar may choose a subset that
// still validates: declared properties only (no extra keys unless the
// object declares none), numbers with bounds as integers or decimals inside
// them, one space at most between tokens; where the schema says nothing of a
// value (json_object, no type, additionalProperties) objects and arrays of up
// to 6 members nested 3 deep and strings of up to 32 characters, so that a
// model that would never close a quote or a bracket still ends its reply.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kvforge {

struct JsonSchemaLimits {
  size_t max_bytes = 1 << 20;  // schema text
  int max_depth = 64;          // nested subschemas
  size_t max_enum = 4096;      // values of one enum
  size_t max_rules = 20000;    // GBNF rules produced
};

// Throws GrammarError (also for text that is not JSON).
std::string json_schema_to_gbnf(std::string_view schema_text, const JsonSchemaLimits& limits = {});
std::string json_schema_value_to_gbnf(const nlohmann::ordered_json& schema,
                                      const JsonSchemaLimits& limits = {});

// The rules of `schema` for a grammar that holds several: its top rule named
// `name`, its other rules prefixed with `name-`, without the shared
// primitives (json_primitives_gbnf() adds them once).
std::string json_schema_rules_gbnf(const nlohmann::ordered_json& schema, const std::string& name,
                                   const JsonSchemaLimits& limits = {});
// The shared rules (space, string, number, value, ...) every schema grammar uses.
std::string json_primitives_gbnf();

// Any JSON object (response_format {"type": "json_object"}).
std::string json_object_gbnf();

}  // namespace kvforge
