// POST /v1/responses (responses_api.h), errors in OpenAI's shape.
#pragma once

#include <httplib.h>

#include <memory>

#include "app/server/generation_pump.h"

namespace kvforge::server {

void install_responses_routes(httplib::Server& http, std::shared_ptr<ApiRouteContext> ctx);

}  // namespace kvforge::server
