#include "app/cli/chat_input.h"

#include <string_view>

namespace kvforge::cli {
namespace {

constexpr std::string_view kBlock = "\"\"\"";
constexpr const char* kFirstPrompt = "> ";
constexpr const char* kMorePrompt = "... ";

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// The rest of a """ block whose first line (after the opening """) is `text`.
std::optional<std::string> read_block(std::string text, LineEditor& editor, InterruptLatch& latch) {
  bool first_line = !text.empty();  // """ alone opens the block without a line of text
  while (!ends_with(text, kBlock)) {
    std::optional<std::string> line = editor.read_line(kMorePrompt, latch);
    if (!line) return text;  // end of input closes the block
    if (line->empty() && latch.take()) return std::string();
    text += (first_line ? "\n" : "") + *line;
    first_line = true;
  }
  text.resize(text.size() - kBlock.size());
  return text;
}

}  // namespace

std::optional<std::string> read_message(LineEditor& editor, InterruptLatch& latch) {
  std::optional<std::string> line = editor.read_line(kFirstPrompt, latch);
  if (!line) return std::nullopt;
  if (line->rfind(kBlock, 0) == 0) {
    std::string first = line->substr(kBlock.size());
    // """text""" on one line is a message of its own.
    if (ends_with(first, kBlock)) return first.substr(0, first.size() - kBlock.size());
    return read_block(std::move(first), editor, latch);
  }
  std::string text = *line;
  while (ends_with(text, "\\")) {
    text.back() = '\n';
    std::optional<std::string> more = editor.read_line(kMorePrompt, latch);
    if (!more) break;
    if (more->empty() && latch.take()) return std::string();
    text += *more;
  }
  if (ends_with(text, "\n")) text.pop_back();
  return text;
}

}  // namespace kvforge::cli
