// GCC 12 reports a false -Wrestrict in std::string's operator+ ("lit" + str),
// which grammar text is built from throughout this file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include "app/structured/tool_call_gbnf.h"

#include "app/structured/gemma4_call_gbnf.h"
#include "app/structured/json_primitives_gbnf.h"
#include "app/structured/json_schema_gbnf.h"
#include "engine/sampling/grammar/grammar_error.h"

namespace kvforge {
namespace {

// Any text that does not begin with `trigger`: empty, a proper prefix of
// it, or a prefix and then a character other than the trigger's next one.
std::string text_rule(const std::string& trigger) {
  std::string body;
  for (size_t i = trigger.size(); i-- > 0;) {
    const std::string after = "\"\" | " + gbnf_class_except(trigger.substr(i, 1)) + " .*";
    body = body.empty()
               ? after
               : after + " | " + gbnf_literal(std::string(1, trigger[i])) + " (" + body + ")";
  }
  return "text ::= " + body + "\n";
}

// What comes before a call's arguments, as GBNF. gpt-oss's harmony message to
// NAME is written in special tokens, named as token references:
// <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>ARGS<|call|>
// (the prompt ends with <|start|>assistant; <|call|> ends the generation).
std::string call_head_gbnf(const ToolCallSyntax& syntax, const std::string& name) {
  if (syntax.style == ToolCallStyle::kHarmony)
    return "<|channel|> " + gbnf_literal("commentary to=functions." + name + " ") +
           " <|constrain|> \"json\" <|message|>";
  return gbnf_literal(syntax.call_head() + name + syntax.call_middle());
}

std::string call_tail_gbnf(const ToolCallSyntax& syntax) {
  if (syntax.style == ToolCallStyle::kHarmony) return " <|call|>";
  return syntax.call_tail().empty() ? "" : " " + gbnf_literal(syntax.call_tail());
}

std::string call_rules(const ToolCallSyntax& syntax, const ToolGrammarRequest& request) {
  std::string out, alternatives;
  for (size_t i = 0; i < request.functions.size(); ++i) {
    const ToolFunction& f = request.functions[i];
    const std::string args = "tool-" + std::to_string(i);
    try {
      out += syntax.style == ToolCallStyle::kGemma4 ? gemma4_arguments_rule_gbnf(f.parameters, args)
                                                    : json_schema_rules_gbnf(f.parameters, args);
    } catch (const GrammarError& e) {
      throw GrammarError("function '" + f.name + "' parameters: " + e.what());
    }
    out += "call-" + std::to_string(i) + " ::= " + call_head_gbnf(syntax, f.name) + " " + args +
           call_tail_gbnf(syntax) + "\n";
    alternatives += (i ? " | call-" : "call-") + std::to_string(i);
  }
  return out + "call ::= " + alternatives + "\n";
}

}  // namespace

std::string tool_call_gbnf(const ToolCallSyntax& syntax, const ToolGrammarRequest& request) {
  if (request.functions.empty()) throw GrammarError("no function to call");
  const bool harmony = syntax.style == ToolCallStyle::kHarmony;
  if (harmony && request.text_allowed)
    throw GrammarError(
        "gpt-oss's harmony calls under tool_choice \"auto\" are read, not constrained");
  std::string calls = "calls ::= ";
  if (!syntax.start.empty()) calls += gbnf_literal(syntax.start) + " ";
  calls += "call";
  // A harmony call ends the generation (<|call|>): one per reply.
  if (request.parallel && syntax.parallel && !harmony)
    calls += " (" + gbnf_literal(syntax.separator) + " call){0," +
             std::to_string(kMaxParallelToolCalls - 1) + "}";
  if (!syntax.end.empty()) calls += " " + gbnf_literal(syntax.end);
  // Gemma 4 may think first, in its thought channel.
  const bool gemma4 = syntax.style == ToolCallStyle::kGemma4;
  const std::string reply = request.text_allowed ? "calls | text" : "calls";
  std::string out = gemma4 ? "root ::= g4-thought? (" + reply + ")\n" : "root ::= " + reply + "\n";
  out += calls + "\n" + call_rules(syntax, request);
  if (request.text_allowed) out += text_rule(syntax.trigger());
  return out + (gemma4 ? gemma4_call_rules_gbnf() : json_primitives_gbnf());
}

}  // namespace kvforge
