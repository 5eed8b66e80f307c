// Evaluates a parsed template against a set of global variables, with
// Jinja's scoping (a for-loop body has its own scope, so `set` inside a loop
// does not leak out; namespaces are the way out), loop variables, macros and
// break/continue. Bounded: output size, macro call depth and evaluation depth
// (blocks, expressions and calls one inside the other) are capped, and every
// render runs on a budget of work and bytes (jinja_budget.h), so a hostile
// template fails with an error instead of eating the machine or its stack.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "app/chat/jinja_ast.h"
#include "app/chat/jinja_budget.h"
#include "app/chat/jinja_value.h"

namespace kvforge::jinja {

// `globals` are the template's variables (messages, bos_token, functions such
// as raise_exception...). Throws TemplateError, or TemplateRaised when the
// template calls raise_exception, TemplateBudgetExceeded past a limit, or
// RenderAbandoned when limits.abandoned says stop. `usage` (optional)
// receives what the render used, also when it throws.

std::string render_template(const NodeList& root, const Object& globals,
                            const RenderLimits& limits = {}, RenderUsage* usage = nullptr);

}  // namespace kvforge::jinja
