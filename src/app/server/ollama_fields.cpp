#include "app/server/ollama_fields.h"

#include <map>

#include "app/server/openai_error.h"

namespace kvforge::server {

void check_ollama_keep_alive(const nlohmann::ordered_json& body) {
  const auto k = body.find("keep_alive");
  if (k == body.end() || k->is_null() || k->is_number() || k->is_string()) return;
  throw bad_param("keep_alive",
                  "'keep_alive' must be a duration (\"5m\") or a number of "
                  "seconds, got " +
                      std::string(k->type_name()));
}

bool check_ollama_runtime_option(const std::string& name, const nlohmann::ordered_json& value) {
  enum class Kind { kInteger, kBoolean };
  static const std::map<std::string, Kind> options = {
      {"num_ctx", Kind::kInteger},  {"num_batch", Kind::kInteger},  {"num_gpu", Kind::kInteger},
      {"main_gpu", Kind::kInteger}, {"num_thread", Kind::kInteger}, {"num_keep", Kind::kInteger},
      {"use_mmap", Kind::kBoolean}, {"use_mlock", Kind::kBoolean},  {"numa", Kind::kBoolean},
      {"low_vram", Kind::kBoolean}};
  const auto it = options.find(name);
  if (it == options.end()) return false;
  const bool integer = it->second == Kind::kInteger;
  if (value.is_null() || (integer ? value.is_number_integer() : value.is_boolean())) return true;
  throw bad_param("options." + name, "'options." + name + "' must be " +
                                         (integer ? "an integer" : "a boolean") + ", got " +
                                         std::string(value.type_name()));
}

}  // namespace kvforge::server
