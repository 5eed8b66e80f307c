// The request and response shapes of the embedding routes, transport-free:
//   POST /v1/embeddings (OpenAI): {"input": string | [string] | [id...] |
//        [[id...]...], "model", "encoding_format"?: "float" | "base64",
//        "dimensions"?: 1..n_embd, the first components renormalised,
//        "user"?: ignored bookkeeping}
//   POST /api/embed (Ollama): {"model", "input": string | [string],
//        "truncate"?: bool (true: an input past the context keeps its first
//        tokens), "dimensions"?, "options"?: runtime options only,
//        "keep_alive"?: accepted}
//   POST /api/embeddings (Ollama's older route): {"model", "prompt": string}
// Any other field is a 400 naming it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "app/server/openai_request.h"

namespace kvforge::server {

// One input: a text to tokenize, or token ids as given.
using EmbeddingInput = std::variant<std::string, std::vector<int32_t>>;

struct EmbeddingsRequest {
  std::string model;  // as the client named it (served_name'd for Ollama)
  std::vector<EmbeddingInput> inputs;
  bool base64 = false;    // encoding_format "base64"
  bool truncate = false;  // Ollama's "truncate" (default true there)
  int dimensions = 0;     // "dimensions": components kept; 0 = the model's width
};

// Most inputs in one request (OpenAI's limit).
constexpr size_t kMaxEmbeddingInputs = 2048;

// Throw ApiError (400 naming the field, 404 model_not_found). `dimensions`:
// the model's embedding width, the most a request may ask for.
EmbeddingsRequest parse_openai_embeddings(std::string_view body, const RequestLimits& limits,
                                          int dimensions);
EmbeddingsRequest parse_ollama_embed(std::string_view body, const RequestLimits& limits,
                                     int dimensions);
EmbeddingsRequest parse_ollama_embeddings(std::string_view body, const RequestLimits& limits);

// The little-endian float32 bytes of `v` in base64 (OpenAI's encoding_format "base64").
std::string base64_floats(const std::vector<float>& v);

nlohmann::json openai_embeddings_response(const EmbeddingsRequest& r,
                                          const std::vector<std::vector<float>>& vectors,
                                          int prompt_tokens);
nlohmann::json ollama_embed_response(const EmbeddingsRequest& r,
                                     const std::vector<std::vector<float>>& vectors,
                                     int prompt_tokens, int64_t total_ns);

}  // namespace kvforge::server
