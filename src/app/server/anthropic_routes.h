// POST /v1/messages and /v1/messages/count_tokens (anthropic_api.h), errors
// in Anthropic's shape.
#pragma once

#include <httplib.h>

#include <memory>

#include "app/server/generation_pump.h"

namespace kvforge::server {

void install_anthropic_routes(httplib::Server& http, std::shared_ptr<ApiRouteContext> ctx);

}  // namespace kvforge::server
