#include "app/server/model_names.h"

#include <algorithm>

#include "app/server/openai_response.h"

namespace kvforge::server {

bool serves_model(const RequestLimits& limits, const std::string& name) {
  if (limits.any_model_name || limits.model_ids.empty()) return true;
  return std::find(limits.model_ids.begin(), limits.model_ids.end(), name) !=
         limits.model_ids.end();
}

ApiError model_not_found(const RequestLimits& limits, const std::string& name) {
  std::string message = "The model '" + name + "' does not exist";
  if (!limits.model_ids.empty()) message += "; this server serves '" + limits.model_ids[0] + "'";
  return ApiError(404, message, "invalid_request_error", "model", "model_not_found");
}

nlohmann::json list_models(const RequestLimits& limits, int64_t created) {
  const size_t n = std::min(std::max<size_t>(limits.listed_models, 1), limits.model_ids.size());
  return models_response({limits.model_ids.begin(), limits.model_ids.begin() + n}, created);
}

nlohmann::json model_info(const RequestLimits& limits, const std::string& id, int64_t created) {
  if (!serves_model(limits, id)) throw model_not_found(limits, id);
  return models_response({id}, created)["data"][0];
}

}  // namespace kvforge::server
