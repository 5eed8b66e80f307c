// Evaluates a parsed template against a set of global variables, with
// Jinja's scoping (a for-loop body has its own scope, so `set` inside a loop
// does not leak out; namespaces are the way out), loop variables, macros and
// break/continue. Bounded work: output size, loop iterations and macro call
// depth are capped, so a hostile template fails with an error instead of
// eating the machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "app/chat/jinja_ast.h"
#include "app/chat/jinja_value.h"

namespace kvforge::jinja {

struct RenderLimits {
  size_t max_output_bytes = 8u << 20;
  int64_t max_steps = 2'000'000;  // loop iterations + macro calls + outputs
  int max_call_depth = 32;        // nested macro calls
};

// `globals` are the template's variables (messages, bos_token, functions such
// as raise_exception...). Throws TemplateError, or TemplateRaised when the
// template calls raise_exception.
std::string render_template(const NodeList& root, const Object& globals,
                            const RenderLimits& limits = {});

}  // namespace kvforge::jinja
