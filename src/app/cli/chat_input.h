// One message typed at `kvforge chat`, which may span lines as in Ollama and
// llama-cli: a line ending in '\' goes on with the next (a newline in the
// message), and a line starting with """ opens a block that runs until a
// line ending with """. The prompt of a continued line is "... ".
#pragma once

#include <optional>
#include <string>

#include "app/cli/line_editor.h"

namespace kvforge::cli {

// The next message (lines joined with '\n', markers removed); nullopt at end
// of input before anything was typed; "" after Ctrl-C (the latch then holds
// it), which drops the lines typed so far. End of input inside a message
// ends the message.
std::optional<std::string> read_message(LineEditor& editor, InterruptLatch& latch);

}  // namespace kvforge::cli
