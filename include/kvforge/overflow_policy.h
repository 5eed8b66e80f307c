// What the static slots do with a prompt longer than their max_prompt_len
// (EngineOptions::overflow; engine/static_pipeline/static_config.h parses it).
#pragma once

namespace kvforge {

enum class OverflowPolicy {
  Error,         // refuse with a message naming both lengths (the default)
  TruncateLeft,  // keep the last max_prompt_len tokens (explicit opt-in)
};

}  // namespace kvforge
