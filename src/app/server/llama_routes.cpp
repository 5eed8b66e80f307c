#include "app/server/llama_routes.h"

#include "app/server/openai_error.h"
#include "app/server/openai_response.h"
#include "app/tokenizer/utf8.h"

namespace kvforge::server {
namespace {

using nlohmann::ordered_json;

ordered_json parse_body(const RequestLimits& limits, std::string_view body) {
  return parse_json_body(body, limits, JsonBodyChecks{});
}

bool flag(const ordered_json& body, const char* name, bool fallback) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) return fallback;
  if (!it->is_boolean())
    throw bad_param(
        name, "'" + std::string(name) + "' must be a boolean, got " + std::string(it->type_name()));
  return it->get<bool>();
}

// A piece as text when it is whole UTF-8, else as its bytes (a token may
// hold part of a character).
nlohmann::json piece_json(const std::string& piece) {
  if (!find_invalid_utf8(piece)) return piece;
  nlohmann::json bytes = nlohmann::json::array();
  for (const unsigned char c : piece) bytes.push_back(static_cast<int>(c));
  return bytes;
}

}  // namespace

std::string tokenize_json(const Tokenizer& tok, const RequestLimits& limits,
                          std::string_view body) {
  const ordered_json j = parse_body(limits, body);
  const auto content = j.find("content");
  // llama-server answers an empty list when "content" is absent.
  if (content == j.end()) return R"({"tokens":[]})";
  if (!content->is_string())
    throw bad_param("content", "'content' must be a string, got " +
                                   std::string(content->type_name()) +
                                   " (mixed token-id arrays are not supported)");
  const bool add_special = flag(j, "add_special", false);
  const bool parse_special = flag(j, "parse_special", true);
  const bool with_pieces = flag(j, "with_pieces", false);
  const std::vector<int32_t> ids =
      tok.encode(content->get<std::string>(), add_special && tok.add_bos(), parse_special);
  // Written as it goes: a JSON value per token costs hundreds of bytes, and
  // a body of 2 MB of one letter held 1.4 GB as {"id", "piece"} objects.
  std::string out = R"({"tokens":[)";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += ',';
    if (!with_pieces) {
      out += std::to_string(ids[i]);
      continue;
    }
    out += R"({"id":)" + std::to_string(ids[i]) + R"(,"piece":)" +
           dump_json(piece_json(tok.token_to_piece(ids[i], true))) + "}";
  }
  return out + "]}";
}

nlohmann::json detokenize_response(const Tokenizer& tok, const RequestLimits& limits,
                                   std::string_view body) {
  const ordered_json j = parse_body(limits, body);
  const auto tokens = j.find("tokens");
  if (tokens == j.end()) return {{"content", ""}};
  if (!tokens->is_array()) throw bad_param("tokens", "'tokens' must be an array of token ids");
  std::vector<int32_t> ids;
  ids.reserve(tokens->size());
  for (const ordered_json& t : *tokens) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= tok.n_vocab())
      throw bad_param("tokens", "'tokens' must hold token ids in [0, " +
                                    std::to_string(tok.n_vocab()) + "), found " + t.dump());
    ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  DecodeOptions options;
  // As llama-server: each token's piece, BOS and control tokens included, spaces kept.
  options.skip_bos = false;
  options.render_special = true;
  options.strip_space_prefix = false;
  return {{"content", tok.decode(ids, options)}};
}

nlohmann::json props_response(const CompletionService& service, const ServerProps& props) {
  const Tokenizer& tok = service.tokenizer();
  const auto text_of = [&tok](int32_t id) { return id < 0 ? std::string() : tok.token_text(id); };
  const int n_ctx = service.limits().max_tokens_limit;
  return {
      {"default_generation_settings", {{"n_ctx", n_ctx}, {"params", {{"n_predict", -1}}}}},
      {"total_slots", props.total_slots},
      {"model_alias", service.model_id()},
      {"model_path", props.model_path},
      {"modalities", {{"vision", false}, {"video", false}, {"audio", false}}},
      {"endpoint_slots", true},
      {"endpoint_props", false},
      {"endpoint_metrics", true},
      {"chat_template", service.chat_template().source()},
      {"bos_token", text_of(tok.bos_id())},
      {"eos_token", text_of(tok.eos_id())},
      {"build_info", "kvforge"},
      {"is_sleeping", false},
  };
}

}  // namespace kvforge::server
