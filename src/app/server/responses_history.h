// previous_response_id: a turn that continues a stored response (response_store.h).
//
// The conversation: the turn's instructions (as OpenAI, earlier turns'
// instructions are not carried over), the stored turns with their replies,
// then the turn's input. The chat template renders it whole, as
// /v1/chat/completions would render the same messages.
//
// The prompt's tokens: re-tokenizing a rendered history need not give the
// tokens the engine computed (a reply's tokens are whatever the model chose,
// and text around a turn boundary may merge differently), and only equal
// tokens hit the prefix cache. So when the rendered text starts with the
// stored turn's prompt text followed by its reply, the prompt is the stored
// prompt ids, the reply's ids, then the rest's tokens: the K/V of everything
// before the rest is in the prefix cache (its full blocks, unless evicted)
// and only the new turn is prefilled. The rest is tokenized alone, which
// spells the same text unless the vocabulary is SentencePiece's with a
// space prefix and the rest does not open with a special token (a space
// would be added). Otherwise the rendered text's own tokens are kept (a
// template that rewrites earlier turns; still correct, only slower).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/server/response_store.h"
#include "app/tokenizer/tokenizer.h"

namespace kvforge::server {

// The chat messages of a turn: [system: instructions] + the stored
// conversation (none without `previous`) + the turn's input messages.
nlohmann::ordered_json conversation_messages(const nlohmann::ordered_json& instructions,
                                             const StoredResponse* previous,
                                             const nlohmann::ordered_json& input);

// The stored conversation after a turn: the earlier turns, the turn's input
// messages and its reply message(s).
nlohmann::ordered_json conversation_after(const StoredResponse* previous,
                                          const nlohmann::ordered_json& input,
                                          const nlohmann::ordered_json& reply);

// Replaces `tokens` (the rendered `text` tokenized) by the stored turn's
// tokens and the rest's, when they continue it as described above. Returns
// how many prompt tokens come from the stored turn (0: `tokens` unchanged).
size_t continue_stored_tokens(const StoredResponse& previous, const std::string& text,
                              const Tokenizer& tokenizer, std::vector<int32_t>& tokens);

}  // namespace kvforge::server
