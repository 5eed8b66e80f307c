// The one error type of the tokenizer: bad vocabulary metadata, invalid UTF-8
// input, token ids out of range. Messages name the file/key/offset involved.
#pragma once

#include <stdexcept>

namespace kvforge {

class TokenizerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace kvforge
