// Errors in OpenAI's shape: an HTTP status and
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
// so clients built for OpenAI (the official SDKs raise BadRequestError,
// AuthenticationError, RateLimitError... from the status) report them well.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

namespace kvforge::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string type = "invalid_request_error",
           std::optional<std::string> param = std::nullopt,
           std::optional<std::string> code = std::nullopt)
      : std::runtime_error(message),
        status_(status),
        type_(std::move(type)),
        param_(std::move(param)),
        code_(std::move(code)) {}

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::optional<std::string>& param() const { return param_; }
  const std::optional<std::string>& code() const { return code_; }

  nlohmann::json to_json() const;

 private:
  int status_;
  std::string type_;
  std::optional<std::string> param_;
  std::optional<std::string> code_;
};

// 400 invalid_request_error naming the parameter.
inline ApiError bad_param(const std::string& param, const std::string& message,
                          std::optional<std::string> code = std::nullopt) {
  return ApiError(400, message, "invalid_request_error", param, std::move(code));
}

}  // namespace kvforge::server
