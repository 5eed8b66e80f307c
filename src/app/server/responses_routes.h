// POST /v1/responses (responses_api.h), GET and DELETE /v1/responses/{id}
// (the response store, response_store.h), errors in OpenAI's shape: an
// unknown id is a 404; a previous_response_id that names none is OpenAI's 400
// previous_response_not_found.
#pragma once

#include <httplib.h>

#include <memory>

#include "app/server/generation_pump.h"
#include "app/server/response_store.h"

namespace kvforge::server {

void install_responses_routes(httplib::Server& http, std::shared_ptr<ApiRouteContext> ctx,
                              std::shared_ptr<ResponseStore> store);

}  // namespace kvforge::server
