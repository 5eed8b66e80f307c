// GBNF for decimal integers within bounds (JSON Schema minimum / maximum):
// the bounds are split by digit count, then digit by digit, into character
// classes, so exactly the integers in range (no leading zeros, no "-0") match.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kvforge {

// An expression (no trailing space) matching the integers in [lo, hi]; an
// absent bound is open (up to 16 digits on that side). Requires lo <= hi.
std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi);

}  // namespace kvforge
