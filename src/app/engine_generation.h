// One prompt through the batching engine, with the result and timings of
// generate() (app/generation.h): what `kvforge run` prints.
#pragma once

#include <span>

#include "app/generation.h"
#include "app/text_engine.h"

namespace kvforge {

// Runs one request to completion on an idle engine, streaming text to
// on_text. A max_tokens that would overflow the context is cut to fit (as
// generate() does: finish "length" when the context is full); a prompt that
// leaves no room throws RequestRejected.
GenerationResult generate_with_engine(TextEngine& engine, std::span<const int32_t> prompt,
                                      const SamplingParams& params, const TextSink& on_text);

}  // namespace kvforge
