#include "app/server/error_family.h"

#include "app/server/anthropic_api.h"
#include "app/server/ollama_api.h"

namespace kvforge::server {
namespace {

// `path` is `prefix` or lies below it.
bool under(std::string_view path, std::string_view prefix) {
  return path.starts_with(prefix) &&
         (path.size() == prefix.size() || prefix.ends_with('/') || path[prefix.size()] == '/');
}

}  // namespace

ErrorFamily error_family(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  if (under(path, "/v1/messages")) return ErrorFamily::kAnthropic;
  if (under(path, "/api/")) return ErrorFamily::kOllama;
  return ErrorFamily::kOpenAI;
}

nlohmann::json error_body(ErrorFamily family, const ApiError& e) {
  switch (family) {
    case ErrorFamily::kAnthropic:
      return anthropic_error(e);
    case ErrorFamily::kOllama:
      return ollama_error(e.what());
    case ErrorFamily::kOpenAI:
      break;
  }
  return e.to_json();
}

}  // namespace kvforge::server
