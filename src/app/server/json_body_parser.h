// A request body's JSON text into an ordered_json, in time linear in its size.
//
// nlohmann's own parser inserts each key of an ordered_json object with a
// linear search for an earlier equal key, so an object of n keys costs n²/2
// comparisons, and a body within the size limit could hold enough keys to
// keep a thread parsing for seconds before the first could be refused
// (docs/bench/design-measurements.md). Here the values are appended without that search, and
// duplicate keys are found by sorting each object's keys when it closes and
// refused, as OpenAI refuses them (a JSON object with two equal keys has no
// agreed meaning).
// Along the way the parse stops early: at a nesting deeper than the limit,
// at the first top-level key the caller refuses, and when the client has gone.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kvforge::server {

struct JsonBodyChecks {
  int max_depth = 32;  // containers around any value
  // Called with each key of the top-level object as it is read; throws to refuse it.
  std::function<void(const std::string&)> top_level_key;
  // Asked every few thousand values; true stops the parse with a 499 ApiError.
  std::function<bool()> cancelled;
};

// Throws ApiError (400) for a duplicate key or a nesting past max_depth, what
// the checks throw, and nlohmann's parse_error / out_of_range for invalid text.
nlohmann::ordered_json parse_json_linear(std::string_view text, const JsonBodyChecks& checks);

// obj[key] when it is a string, `fallback` when absent or null, and
// "(not a string)" otherwise, which no field's check accepts, so the
// caller's refusal names the field (nlohmann's value() would throw a
// type_error, answered 500).
std::string string_value(const nlohmann::ordered_json& obj, const char* key,
                         const std::string& fallback);

}  // namespace kvforge::server
