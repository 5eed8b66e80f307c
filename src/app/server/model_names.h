// Which "model" names a request may use: the ids of --alias (several allowed),
// the file's stem and its general.name, or any name with --any-model-name (for
// apps with a hard-coded model id). An unknown name is a 404 model_not_found,
// as OpenAI and vLLM answer it (the SDKs raise NotFoundError from the status).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "app/server/openai_error.h"
#include "app/server/openai_request.h"

namespace kvforge::server {

bool serves_model(const RequestLimits& limits, const std::string& name);

// 404 invalid_request_error, param "model", code "model_not_found".
ApiError model_not_found(const RequestLimits& limits, const std::string& name);

// GET /v1/models: the listed ids (RequestLimits::listed_models of model_ids).
nlohmann::json list_models(const RequestLimits& limits, int64_t created);
// GET /v1/models/{id}: the model object, or throws model_not_found.
nlohmann::json model_info(const RequestLimits& limits, const std::string& id, int64_t created);

}  // namespace kvforge::server
