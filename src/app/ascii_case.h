// Case-insensitive comparison of ASCII names (HTTP field names and schemes,
// quantization type names): bytes outside A-Z compare as they are.
#pragma once

#include <cctype>
#include <string_view>

namespace kvforge {

inline bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

}  // namespace kvforge
