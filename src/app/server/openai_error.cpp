#include "app/server/openai_error.h"

namespace kvforge::server {

nlohmann::json ApiError::to_json() const {
  nlohmann::json err = {{"message", what()}, {"type", type_}};
  err["param"] = param_ ? nlohmann::json(*param_) : nlohmann::json(nullptr);
  err["code"] = code_ ? nlohmann::json(*code_) : nlohmann::json(nullptr);
  return {{"error", std::move(err)}};
}

}  // namespace kvforge::server
