// The GBNF rules every schema grammar draws on (strings, numbers, literals,
// any JSON value) and the string formats. Each rule of a value ends in
// `space`, the whitespace allowed after it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace kvforge {

// name -> body of the shared rules: space, char, string, integer, number,
// boolean, null, value (any JSON value, nesting bounded), object, array.
const std::vector<std::pair<std::string, std::string>>& json_primitive_rules();

// A GBNF literal for `text`, quoted and escaped.
std::string gbnf_literal(std::string_view text);
// A GBNF class of any character but the bytes of `bytes` (ASCII), e.g. [^\x3C\x7C].
std::string gbnf_class_except(std::string_view bytes);

// Body of a string with minLength/maxLength (characters).
std::string string_length_gbnf(size_t min, std::optional<size_t> max);
// Body of a string in format `format`, or nullopt if it is not supported.
std::optional<std::string> string_format_gbnf(const std::string& format);
// Body of a number within [lo, hi] (exclusive where asked); nullopt if the
// bounds leave no number the grammar can write.
std::string number_range_gbnf(std::optional<double> lo, bool lo_exclusive, std::optional<double> hi,
                              bool hi_exclusive, bool integer);

}  // namespace kvforge
