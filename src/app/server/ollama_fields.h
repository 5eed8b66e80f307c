// The fields Ollama's routes share beyond the request itself: "keep_alive" and
// the runtime "options" (context size, threads, GPU layers...). kvforge's own
// flags fix what they set, so they are accepted and ignored, as Ollama's clients
// send them by default; but of the type Ollama takes, as Ollama refuses a
// "keep_alive" of true or a "num_ctx" of "big" (silently ignoring a value
// nothing could have meant would hide the client's bug).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kvforge::server {

// Throws ApiError 400 unless body's "keep_alive" is absent, null, a number
// (seconds) or a string (a duration such as "5m").
void check_ollama_keep_alive(const nlohmann::ordered_json& body);

// False when `name` is not one of the runtime options; true when it is and
// `value` has its type (an integer, or a boolean for the use_mmap kind);
// throws ApiError 400 naming options.<name> when it is and has not.
bool check_ollama_runtime_option(const std::string& name, const nlohmann::ordered_json& value);

}  // namespace kvforge::server
