// What a grammar, a JSON schema or a budget refuses: the message names the
// rule, the line or the schema path, and what was wrong.
#pragma once

#include <stdexcept>
#include <string>

namespace kvforge {

class GrammarError : public std::runtime_error {
 public:
  explicit GrammarError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace kvforge
