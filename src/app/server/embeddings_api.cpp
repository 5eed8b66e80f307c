#include "app/server/embeddings_api.h"

#include <cstring>
#include <limits>

#include "app/server/model_names.h"
#include "app/server/ollama_api.h"
#include "app/server/ollama_fields.h"
#include "app/server/openai_error.h"

namespace kvforge::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// A token-id array: every element an integer in int32's range.
bool embed_is_token_array(const ordered_json& v) {
  if (!v.is_array() || v.empty()) return false;
  for (const ordered_json& t : v)
    if (!t.is_number_integer()) return false;
  return true;
}

std::vector<int32_t> embed_tokens(const ordered_json& v, const char* field) {
  std::vector<int32_t> out;
  for (const ordered_json& t : v) {
    const int64_t id = t.get<int64_t>();
    if (id < 0 || id > std::numeric_limits<int32_t>::max())
      throw bad_param(field, "token id " + std::to_string(id) + " is out of range");
    out.push_back(static_cast<int32_t>(id));
  }
  return out;
}

// "input": a string, an array of strings, an array of token ids, or an array
// of such arrays (token arrays only where `tokens_allowed`).
std::vector<EmbeddingInput> embed_inputs(const ordered_json& v, bool tokens_allowed) {
  const std::string shapes = tokens_allowed
                                 ? "a string, an array of strings, an array of token ids or an "
                                   "array of token-id arrays"
                                 : "a string or an array of strings";
  std::vector<EmbeddingInput> out;
  if (v.is_string()) return {v.get<std::string>()};
  if (!v.is_array() || v.empty())
    throw bad_param("input", "'input' must be " + shapes + ", not empty");
  if (v.size() > kMaxEmbeddingInputs)
    throw bad_param("input", "'input' holds " + std::to_string(v.size()) + " items; at most " +
                                 std::to_string(kMaxEmbeddingInputs));
  if (tokens_allowed && embed_is_token_array(v)) return {embed_tokens(v, "input")};
  for (const ordered_json& item : v) {
    if (item.is_string())
      out.emplace_back(item.get<std::string>());
    else if (tokens_allowed && embed_is_token_array(item))
      out.emplace_back(embed_tokens(item, "input"));
    else
      throw bad_param("input", "'input' must be " + shapes);
  }
  return out;
}

std::string embed_model(const ordered_json& body, const RequestLimits& limits, bool ollama) {
  const auto m = body.find("model");
  if (m == body.end() || !m->is_string()) throw bad_param("model", "'model' must be a string");
  const std::string given = m->get<std::string>();
  const std::string name = ollama ? ollama_served_name(given) : given;
  if (!serves_model(limits, name)) throw model_not_found(limits, name);
  return given;
}

// "dimensions": 1..width (Matryoshka truncation, OpenAI's text-embedding-3
// semantics); 0 when absent or equal to the width.
int embed_dimensions(const ordered_json& body, int width) {
  const auto d = body.find("dimensions");
  if (d == body.end() || d->is_null()) return 0;
  if (!d->is_number_integer()) throw bad_param("dimensions", "'dimensions' must be an integer");
  const int64_t n = d->get<int64_t>();
  if (n < 1 || n > width)
    throw bad_param("dimensions", "'dimensions' must be between 1 and the model's width " +
                                      std::to_string(width) + ", got " + std::to_string(n));
  return n == width ? 0 : int(n);
}

void embed_only_fields(const ordered_json& body, std::initializer_list<const char*> known) {
  for (const auto& [key, value] : body.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok) throw bad_param(key, "'" + key + "' is not supported on this route");
  }
}

// Ollama's "options" (runtime ones only: sampling does not apply) and "keep_alive".
void embed_check_ollama_extras(const ordered_json& body) {
  check_ollama_keep_alive(body);
  const auto o = body.find("options");
  if (o == body.end() || o->is_null()) return;
  if (!o->is_object()) throw bad_param("options", "'options' must be an object");
  for (const auto& [key, value] : o->items())
    if (!check_ollama_runtime_option(key, value))
      throw bad_param("options." + key, "'options." + key + "' does not apply to embeddings");
}

ordered_json embed_parse(std::string_view body, const RequestLimits& limits) {
  return parse_json_body(body, limits, JsonBodyChecks{});
}

}  // namespace

EmbeddingsRequest parse_openai_embeddings(std::string_view text, const RequestLimits& limits,
                                          int dimensions) {
  const ordered_json body = embed_parse(text, limits);
  embed_only_fields(body, {"input", "model", "encoding_format", "dimensions", "user"});
  EmbeddingsRequest r;
  r.model = embed_model(body, limits, false);
  if (!body.contains("input")) throw bad_param("input", "'input' is required");
  r.inputs = embed_inputs(body["input"], true);
  if (const auto f = body.find("encoding_format"); f != body.end() && !f->is_null()) {
    if (*f != "float" && *f != "base64")
      throw bad_param("encoding_format", "'encoding_format' must be \"float\" or \"base64\"");
    r.base64 = *f == "base64";
  }
  r.dimensions = embed_dimensions(body, dimensions);
  if (const auto u = body.find("user"); u != body.end() && !u->is_string())
    throw bad_param("user", "'user' must be a string");
  return r;
}

EmbeddingsRequest parse_ollama_embed(std::string_view text, const RequestLimits& limits,
                                     int dimensions) {
  const ordered_json body = embed_parse(text, limits);
  embed_only_fields(body, {"model", "input", "truncate", "dimensions", "options", "keep_alive"});
  EmbeddingsRequest r;
  r.model = embed_model(body, limits, true);
  if (!body.contains("input")) throw bad_param("input", "'input' is required");
  r.inputs = embed_inputs(body["input"], false);
  r.truncate = true;  // Ollama's default
  if (const auto t = body.find("truncate"); t != body.end() && !t->is_null()) {
    if (!t->is_boolean()) throw bad_param("truncate", "'truncate' must be a boolean");
    r.truncate = t->get<bool>();
  }
  r.dimensions = embed_dimensions(body, dimensions);
  embed_check_ollama_extras(body);
  return r;
}

EmbeddingsRequest parse_ollama_embeddings(std::string_view text, const RequestLimits& limits) {
  const ordered_json body = embed_parse(text, limits);
  embed_only_fields(body, {"model", "prompt", "options", "keep_alive"});
  EmbeddingsRequest r;
  r.model = embed_model(body, limits, true);
  const auto p = body.find("prompt");
  if (p == body.end() || !p->is_string()) throw bad_param("prompt", "'prompt' must be a string");
  r.inputs = {p->get<std::string>()};
  r.truncate = true;
  embed_check_ollama_extras(body);
  return r;
}

std::string base64_floats(const std::vector<float>& v) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * sizeof(float), '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t u;
    std::memcpy(&u, &v[i], sizeof u);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + size_t(b)] = char((u >> (8 * b)) & 0xFF);
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t chunk = 0;
    for (size_t j = 0; j < 3; ++j)
      chunk = (chunk << 8) | (j < n ? static_cast<unsigned char>(bytes[i + j]) : 0u);
    for (size_t j = 0; j < 4; ++j) out += j <= n ? kAlphabet[(chunk >> (18 - 6 * j)) & 0x3F] : '=';
  }
  return out;
}

json openai_embeddings_response(const EmbeddingsRequest& r,
                                const std::vector<std::vector<float>>& vectors, int prompt_tokens) {
  json data = json::array();
  for (size_t i = 0; i < vectors.size(); ++i)
    data.push_back({{"object", "embedding"},
                    {"index", i},
                    {"embedding", r.base64 ? json(base64_floats(vectors[i])) : json(vectors[i])}});
  return {{"object", "list"},
          {"data", std::move(data)},
          {"model", r.model},
          {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
}

json ollama_embed_response(const EmbeddingsRequest& r,
                           const std::vector<std::vector<float>>& vectors, int prompt_tokens,
                           int64_t total_ns) {
  return {{"model", r.model},
          {"embeddings", vectors},
          {"total_duration", total_ns},
          {"load_duration", 0},
          {"prompt_eval_count", prompt_tokens}};
}

}  // namespace kvforge::server
