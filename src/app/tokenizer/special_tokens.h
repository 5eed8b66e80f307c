// Special-token facts that GGUF metadata does not always state: which token
// ends a turn, which tokens end generation, which swallow nearby whitespace.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "app/tokenizer/vocabulary.h"

namespace kvforge {

// Types whose tokens are matched as a whole in text instead of being built by merges.
bool is_special_type(TokenType type);

// Fills in what the metadata left out:
// - eot_id, when absent, from well-known end-of-turn spellings (<|eot_id|>, <|im_end|>,
// <|end|>...);
// - Phi-3's whitespace rule: its Hugging Face tokenizer marks the chat tokens
//   (<|user|>, <|end|>, ..., </s>) "rstrip", so "<|user|>\nHi" tokenizes as
//   <|user|> ▁Hi. GGUF has no field for this, so like llama.cpp it is keyed on
//   the model name (`lowercase_model_name` contains "phi-3" or "phi3").
void complete_special_tokens(Vocabulary& vocab, std::string_view lowercase_model_name);

// Tokens after which generation stops: EOS, EOT, EOM and every control or
// user-defined token spelled as a well-known end of turn, and gpt-oss's
// <|return|> and <|call|>; with both of those (a harmony vocabulary) not
// <|end|>, which there closes a message mid-reply. Sorted, unique.
std::vector<int32_t> end_of_generation_ids(const Vocabulary& vocab);

}  // namespace kvforge
