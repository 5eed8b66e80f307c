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

// The render went past its work or memory budget (jinja_budget.h): the
// template, or what it was given, asks for more than a chat prompt ever needs.
class TemplateBudgetExceeded : public TemplateError {
 public:
  using TemplateError::TemplateError;
};

// The caller stopped wanting the result (RenderLimits::abandoned said so).
class RenderAbandoned : public std::runtime_error {
 public:
  RenderAbandoned() : std::runtime_error("template render abandoned") {}
};

// raise_exception("...") called by the template itself: the conversation is
// not one the model accepts (e.g. roles that do not alternate). The message
// is the template's own, meant for the API caller.
class TemplateRaised : public std::runtime_error {
 public:
  explicit TemplateRaised(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace kvforge::jinja
