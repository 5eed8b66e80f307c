#include "app/server/cors.h"

namespace kvforge::server {
namespace {

// The request headers a preflight may ask for when it names none: the ones
// the OpenAI, Anthropic and Ollama clients send.
constexpr const char* kAllowedHeaders =
    "Authorization, Content-Type, X-Api-Key, Anthropic-Version, OpenAI-Organization, "
    "OpenAI-Project, X-Stainless-Lang, X-Stainless-Package-Version, X-Stainless-OS, "
    "X-Stainless-Arch, X-Stainless-Runtime, X-Stainless-Runtime-Version, X-Stainless-Retry-Count, "
    "X-Stainless-Timeout";
constexpr const char* kAllowedMethods = "GET, POST, DELETE, OPTIONS";
// How long a browser may reuse a preflight's answer, in seconds.
constexpr const char* kMaxAgeSeconds = "86400";

}  // namespace

bool CorsPolicy::apply(const httplib::Request& req, httplib::Response& res) const {
  if (!enabled()) return false;
  res.set_header("Access-Control-Allow-Origin", origin_);
  // A named origin: caches must not serve this answer to a request from another.
  if (origin_ != "*") res.set_header("Vary", "Origin");
  res.set_header("Access-Control-Expose-Headers", "Retry-After, Content-Type");
  if (req.method != "OPTIONS") return false;
  res.status = 204;
  res.set_header("Access-Control-Allow-Methods", kAllowedMethods);
  // Echoes what the preflight asks for: any header this server reads is allowed.
  const std::string asked = req.get_header_value("Access-Control-Request-Headers");
  res.set_header("Access-Control-Allow-Headers", asked.empty() ? kAllowedHeaders : asked);
  res.set_header("Access-Control-Max-Age", kMaxAgeSeconds);
  return true;
}

}  // namespace kvforge::server
