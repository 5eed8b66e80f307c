#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace kvforge {

// An enum's value names as one table, read both ways: a row per value, so a
// name and its parse cannot drift apart. A value missing from the table reads
// as `fallback`.
template <class E>
using EnumName = std::pair<E, const char*>;

template <class E, std::size_t N>
constexpr const char* name_of(E value, const EnumName<E> (&names)[N], const char* fallback = "?") {
  for (const auto& [v, name] : names)
    if (v == value) return name;
  return fallback;
}

template <class E, std::size_t N>
constexpr std::optional<E> value_named(std::string_view name, const EnumName<E> (&names)[N]) {
  for (const auto& [v, n] : names)
    if (name == n) return v;
  return std::nullopt;
}

}  // namespace kvforge
