// Cross-origin access for browser apps (`serve --cors-origin ORIGIN`): every
// answer carries Access-Control-Allow-Origin, and an OPTIONS preflight on any
// path is answered 204 before routing and before the API key is checked (a
// browser sends no credentials with a preflight). Without an origin nothing
// changes: no Access-Control-* header, and OPTIONS is an unknown route.
#pragma once

#include <httplib.h>

#include <string>

namespace kvforge::server {

class CorsPolicy {
 public:
  // `origin`: one origin ("https://app.example"), "*" for any, or empty for none.
  explicit CorsPolicy(std::string origin) : origin_(std::move(origin)) {}

  bool enabled() const { return !origin_.empty(); }
  // Adds the headers every answer carries; a preflight is answered (true).
  bool apply(const httplib::Request& req, httplib::Response& res) const;

 private:
  std::string origin_;
};

}  // namespace kvforge::server
