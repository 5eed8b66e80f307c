// Errors of the chat-template engine. Every message names the template line
// and the construct ("line 3: unknown filter 'wordwrap'"), so a model whose
// template goes beyond the supported Jinja subset fails with a reason.
#pragma once

#include <stdexcept>
#include <string>

namespace kvforge::jinja {

class TemplateError : public std::runtime_error {
 public:
  TemplateError(int line, const std::string& what)
      : std::runtime_error("chat template line " + std::to_string(line) + ": " + what),
        line_(line) {}
  int line() const { return line_; }

 private:
  int line_;
};

// raise_exception("...") called by the template itself: the conversation is
// not one the model accepts (e.g. roles that do not alternate). The message
// is the template's own, meant for the API caller.
class TemplateRaised : public std::runtime_error {
 public:
  explicit TemplateRaised(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace kvforge::jinja
