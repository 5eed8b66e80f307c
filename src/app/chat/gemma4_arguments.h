// Gemma 4 writes a call's arguments in its own notation, the one its chat
// template's format_argument macro renders them in:
//   {city:<|"|>Paris<|"|>,days:3,opts:{metric:true,tags:[<|"|>a<|"|>]},x:null}
// An object's keys are bare (up to the ':'), a string is its raw text between
// two <|"|> marks (no escapes), numbers, true, false and null are JSON's.
// This reads that notation as it is generated and writes the JSON it denotes
// (keys and strings quoted and escaped, whitespace outside strings dropped),
// which is the text llama-server returns as a Gemma 4 call's arguments.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvforge {

class Gemma4Arguments {
 public:
  static constexpr std::string_view kQuote = "<|\"|>";
  // Objects and arrays nested deeper than this are malformed.
  static constexpr size_t kMaxDepth = 32;
  // A number or literal longer than this is malformed.
  static constexpr size_t kMaxScalarBytes = 64;

  enum class Status {
    kMore,    // the object is not closed yet: feed more text
    kDone,    // the outer object closed; pos is just past its '}'
    kBroken,  // not Gemma 4's notation of an object
  };
  // Reads `text` from `pos` (the arguments start there: an object), moves
  // `pos` past what it has taken and appends the JSON it stands for to
  // `json`. A possible start of <|"|> at the end of the text and a number or
  // literal not yet ended are held (taken, written once whole). Call again
  // with the same text grown; after kDone or kBroken, nothing more is read.
  Status read(std::string_view text, size_t& pos, std::string& json);

 private:
  enum class Expect { kValue, kFirstValue, kKey, kFirstKey, kAfterValue, kString, kScalar };
  bool value(std::string_view text, size_t& pos, std::string& json);
  bool key(std::string_view text, size_t& pos, std::string& json);
  bool string(std::string_view text, size_t& pos, std::string& json);
  bool scalar(std::string_view text, size_t& pos, std::string& json);
  bool after_value(std::string_view text, size_t& pos, std::string& json);
  bool open(char bracket, std::string& json);

  Expect expect_ = Expect::kValue;
  Status status_ = Status::kMore;
  std::vector<char> open_;  // '{' or '[' per level
  std::string held_;        // a key or scalar read in part
};

// The JSON text of a whole argument object in Gemma 4's notation (nothing
// after it), or nullopt when it is not one.
std::optional<std::string> gemma4_arguments_json(std::string_view text);

}  // namespace kvforge
