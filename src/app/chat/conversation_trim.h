// Fitting a conversation into a context by dropping its oldest turns, as
// Ollama truncates and as the Responses API's `truncation: "auto"` does:
// system (and developer) messages are never dropped, nor the last message
// (the one being answered); a turn is dropped whole, from its user message
// up to the next user message, so what is left still starts with a user
// turn after the system messages.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

namespace kvforge {

struct TrimResult {
  int messages_dropped = 0;
  bool fits = false;  // false: even the system messages and the last message do not fit
};

// Drops the fewest oldest turns of `messages` (OpenAI chat messages, each an
// object with a "role") for `fits(messages)` to hold, or every droppable turn
// when none suffices. `fits` must be monotone (dropping more never stops a
// conversation from fitting: true of prompt lengths); the last call of `fits`
// is on the result.

TrimResult trim_oldest_turns(
    std::vector<nlohmann::ordered_json>& messages,
    const std::function<bool(const std::vector<nlohmann::ordered_json>&)>& fits);

}  // namespace kvforge
