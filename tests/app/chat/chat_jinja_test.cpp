// The Jinja subset behind chat templates: whitespace rules, scoping, loop
// variables, filters, tests, Python value formatting, and clear errors (with
// the line) for what it cannot or will not render.
#include <gtest/gtest.h>
#include <pthread.h>

#include "app/chat/chat_template.h"
#include "app/chat/jinja_parser.h"
#include "app/chat/python_format.h"
#include "sanitized.h"

namespace kvforge {
namespace {

using nlohmann::ordered_json;

std::string render(const std::string& source, ordered_json messages = ordered_json::array(),
                   jinja::RenderLimits limits = {}) {
  ChatTemplateInputs in;
  in.messages = std::move(messages);
  in.bos_token = "<s>";
  in.eos_token = "</s>";
  return ChatTemplate::parse(source).render(in, limits);
}

// The TemplateError message of rendering `source`, or "" when it renders.
std::string error_of(const std::string& source, jinja::RenderLimits limits = {}) {
  try {
    render(source, ordered_json::array(), limits);
  } catch (const TemplateError& e) {
    return e.what();
  }
  return "";
}

TEST(ChatJinja, WhitespaceControlTrimAndLstripBlocks) {
  // trim_blocks drops the newline after a block tag; lstrip_blocks the indentation before it.
  EXPECT_EQ(render("{% if true %}\n  a\n  {% endif %}\nb"), "  a\nb");
  EXPECT_EQ(render("x  {%- if true -%}  y  {%- endif -%}  z"), "xyz");
  EXPECT_EQ(render("a {{- 'b' -}} c"), "abc");
  EXPECT_EQ(render("a {{ 'b' }}\nc"), "a b\nc");             // no trim after '}}'
  EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");  // '+' keeps the indentation
  EXPECT_EQ(render("a\n{# note #}\nb"), "a\nb");
  EXPECT_EQ(render("line\n"), "line");  // one trailing newline is dropped
  EXPECT_EQ(render("{% raw %}{{ not evaluated }}{% endraw %}"), "{{ not evaluated }}");
}

TEST(ChatJinja, ForLoopVariablesFilterElseAndScoping) {
  EXPECT_EQ(render("{% for x in [10, 20, 30] %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}"
                   "{{ loop.last }}{{ loop.length }}{{ loop.revindex }};{% endfor %}"),
            "10TrueFalse33;21FalseFalse32;32FalseTrue31;");
  EXPECT_EQ(render("{% for x in [1, 2, 3, 4] if x is even %}{{ x }}{{ loop.last }} {% endfor %}"),
            "2False 4True ");
  EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
  // set inside a loop does not leak; a namespace carries state out.
  EXPECT_EQ(render("{% set n = 0 %}{% set ns = namespace(n=0) %}{% for x in [1, 2] %}"
                   "{% set n = n + x %}{% set ns.n = ns.n + x %}{% endfor %}{{ n }} {{ ns.n }}"),
            "0 3");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }},{% endfor %}"),
            "a=1,b=2,");
  EXPECT_EQ(render("{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}"
                   "{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
            "013");
  EXPECT_EQ(render("{% for m in messages %}{{ m.role }}{{ loop.cycle('a', 'b') }}{% endfor %}",
                   ordered_json::parse(R"([{"role": "u"}, {"role": "v"}, {"role": "w"}])")),
            "uavbwa");
}

TEST(ChatJinja, ExpressionsFollowPython) {
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }}"),
            "3 -4 2 3.5 1024");
  EXPECT_EQ(render("{{ 'ab' * 3 }} {{ [1] + [2] }} {{ 'a' ~ 1 ~ none }}"), "ababab [1, 2] a1None");
  EXPECT_EQ(render("{{ 'x' if false }}|{{ 'y' if 1 > 2 else 'z' }}"), "|z");
  EXPECT_EQ(render("{{ 0 or 'd' }} {{ 1 and 'e' }} {{ not [] }}"), "d e True");
  EXPECT_EQ(render("{{ 'lo' in 'hello' }} {{ 3 not in [1, 2] }} {{ 'a' in {'a': 1} }}"),
            "True True True");
  EXPECT_EQ(render("{{ 'hello'[1:3] }} {{ [1, 2, 3][::-1] }} {{ 'héllo'[-4:] }} {{ [1, 2][5] }}"),
            "el [3, 2, 1] éllo ");
  EXPECT_EQ(render("{{ {'a': [1, 'x', none, true, 1.5]} }}"), "{'a': [1, 'x', None, True, 1.5]}");
  EXPECT_EQ(render("{{ 1 == 1.0 }} {{ [1, {'a': 2}] == [1, {'a': 2}] }} {{ 'a' < 'b' }}"),
            "True True True");
}

TEST(ChatJinja, FiltersAndMethods) {
  EXPECT_EQ(
      render("{{ '  a b  ' | trim }}|{{ 'xxaxx'.strip('x') }}|{{ '\\n\\nhi'.lstrip('\\n') }}"),
      "a b|a|hi");
  EXPECT_EQ(render("{{ 'a/think b'.replace('/think', '') }} {{ 'a,b,,c'.split(',') }}"),
            "a b ['a', 'b', '', 'c']");
  EXPECT_EQ(render("{{ 'Hello'.startswith('He') }} {{ 'x.py'.endswith(('.js', '.py')) }}"),
            "True True");
  EXPECT_EQ(
      render("{{ [3, 1, 2] | sort | join(', ') }} {{ 'abc' | length }} {{ 'héllo' | length }}"),
      "1, 2, 3 3 5");
  EXPECT_EQ(
      render("{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='c') | list }}",
             ordered_json::parse(R"([{"role": "user", "c": 1}, {"role": "bot", "c": 2},
                                          {"role": "user", "c": 3}])")),
      "[1, 3]");
  EXPECT_EQ(render("{{ ['a', 'code_interpreter', 'b'] | reject('equalto', 'code_interpreter') | "
                   "join(', ') }}"),
            "a, b");
  EXPECT_EQ(
      render("{{ x | default('none given') }} {{ '' | default('e', true) }} {{ 'ab' | upper }}"),
      "none given e AB");
  EXPECT_EQ(render("{{ [1, 2] | first }}{{ [1, 2] | last }} {{ '42' | int + 1 }} {{ {'b': "
                   "1}.get('a', 7) }}"),
            "12 43 7");
  EXPECT_EQ(render("{% for k, v in {'z': 1, 'a': 2} | items %}{{ k }}{{ v }}{% endfor %}"), "z1a2");
}

TEST(ChatJinja, ToJsonMatchesPythonJsonDumps) {
  EXPECT_EQ(render("{{ {'b': 1, 'a': [true, none, 1.5, 'x\"y', 'é\\n']} | tojson }}"),
            "{\"b\": 1, \"a\": [true, null, 1.5, \"x\\\"y\", \"é\\n\"]}");
  EXPECT_EQ(render("{{ {'a': [1, {}], 'b': []} | tojson(indent=2) }}"),
            "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": []\n}");
  EXPECT_EQ(render("{{ messages | tojson }}",
                   ordered_json::parse(R"([{"z": 1e-7, "a": 100000000000000000000.0}])")),
            "[{\"z\": 1e-07, \"a\": 1e+20}]");
  EXPECT_EQ(jinja::python_float_repr(0.1), "0.1");
  EXPECT_EQ(jinja::python_float_repr(1e16), "1e+16");
  EXPECT_EQ(jinja::python_float_repr(123456789012345.0), "123456789012345.0");
  EXPECT_EQ(jinja::python_float_repr(0.0001), "0.0001");
  EXPECT_EQ(jinja::python_float_repr(-2.5e-5), "-2.5e-05");
}

TEST(ChatJinja, Tests) {
  EXPECT_EQ(
      render(
          "{{ x is defined }} {{ none is none }} {{ 'a' is string }} {{ {} is mapping }} "
          "{{ [] is iterable }} {{ 3 is odd }} {{ 4 is divisibleby(2) }} {{ x is not defined }}"),
      "False True True True True True True True");
  EXPECT_EQ(
      render("{{ messages[0].tool_calls is defined }} {{ messages[0]['role'] is equalto 'u' }}",
             ordered_json::parse(R"([{"role": "u"}])")),
      "False True");
}

TEST(ChatJinja, MacrosAndSetBlocks) {
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                   "{{ greet('Ann') }} {{ greet('Bo', punct='?') }}"),
            "Hi Ann! Hi Bo?");
  EXPECT_EQ(render("{% set block %}a{{ 1 + 1 }}b{% endset %}[{{ block }}]"), "[a2b]");
  EXPECT_EQ(render("{{ bos_token }}x{{ eos_token }}"), "<s>x</s>");
}

TEST(ChatJinja, ErrorsNameTheConstructAndLine) {
  EXPECT_NE(error_of("a\nb\n{% if x %}never closed").find("expected '{% endif %}'"),
            std::string::npos);
  EXPECT_NE(error_of("{{ x | wordwrap }}").find("line 1: unknown filter 'wordwrap'"),
            std::string::npos);
  EXPECT_NE(error_of("\n\n{{ x is frobnicated }}").find("line 3: unknown test 'frobnicated'"),
            std::string::npos);
  EXPECT_NE(error_of("{% call foo() %}{% endcall %}").find("unsupported tag '{% call %}'"),
            std::string::npos);
  EXPECT_NE(error_of("{% endfor %}").find("without a matching opening tag"), std::string::npos);
  EXPECT_NE(error_of("{{ 'abc }}").find("unterminated string literal"), std::string::npos);
  EXPECT_NE(error_of("{{ x ").find("unterminated '{{'"), std::string::npos);
  EXPECT_NE(error_of("{# x").find("unterminated comment"), std::string::npos);
  EXPECT_NE(error_of("{{ a $ b }}").find("unexpected character '$'"), std::string::npos);
  EXPECT_NE(error_of("{{ foo.bar }}").find("'foo' is undefined"), std::string::npos);
  EXPECT_NE(error_of("{{ 'a' + 1 }}").find("unsupported operand types for +: str and int"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 1 // 0 }}").find("division or modulo by zero"), std::string::npos);
  EXPECT_NE(error_of("{{ 9223372036854775807 + 1 }}").find("integer overflow"), std::string::npos);
  // An index past int64 after a dot (fuzz_jinja_template: std::stoll's out_of_range escaped).
  EXPECT_NE(error_of("{{ x.99999999999999999999 }}").find("line 1: integer literal out of range"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 'abc'.frob() }}").find("unsupported string method 'frob'"),
            std::string::npos);
  EXPECT_NE(error_of("{{ nothing() }}").find("'nothing' is undefined"), std::string::npos);
  EXPECT_NE(error_of("{% break %}").find("'break' outside a for loop"), std::string::npos);
  EXPECT_NE(error_of("{% set x = 1 %}{% set x.y = 2 %}").find("not a namespace()"),
            std::string::npos);
}

TEST(ChatJinja, HostileTemplatesHitLimits) {
  const std::string deep = "{{ " + std::string(1000, '(') + "1" + std::string(1000, ')') + " }}";
  EXPECT_NE(error_of(deep).find("nested deeper than"), std::string::npos);
  std::string deep_blocks;
  for (int i = 0; i < 500; ++i) deep_blocks += "{% if true %}";
  EXPECT_NE(error_of(deep_blocks).find("nested deeper than"), std::string::npos);
  jinja::RenderLimits small;
  small.max_work = 10000;
  small.max_output_bytes = 1000;
  EXPECT_NE(error_of("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}",
                     small)
                .find("exceeded its work budget of 10000 units"),
            std::string::npos);
  EXPECT_NE(error_of("{% for i in range(100) %}{{ 'x' * 100 }}{% endfor %}", small)
                .find("output exceeds 1000 bytes"),
            std::string::npos);
  EXPECT_NE(error_of("{{ 'x' * 20000000 }}").find("would exceed"), std::string::npos);
  EXPECT_NE(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}")
                .find("nested deeper than 32 calls"),
            std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace(a=1) %}{% set ns.a = [ns] %}").find("namespace"),
            std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace(v=[]) %}{% for i in range(1000) %}"
                     "{% set ns.v = [ns.v] %}{% endfor %}")
                .find("nested deeper than 256 levels"),
            std::string::npos);
  EXPECT_THROW(ChatTemplate::parse(std::string(ChatTemplate::kMaxSourceBytes + 1, 'x')),
               TemplateError);
}

std::string repeated(std::string_view link, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += link;
  return out;
}

// A template that evaluates `expr` only when the last message is "BOOM", so
// the load-time test render (ChatTemplate::check_renders) never reaches it.
std::string boom_branch(const std::string& expr) {
  return "{% if messages[-1].content == 'BOOM' %}{{ " + expr +
         " }}{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}";
}

// The TemplateError of parsing `source` and rendering it for a user whose
// last message is `content`, or "" when it renders.
std::string error_for(const std::string& source, const std::string& content) {
  try {
    render(source, ordered_json::array({{{"role", "user"}, {"content", content}}}));
  } catch (const TemplateError& e) {
    return e.what();
  }
  return "";
}

// Issue 42: the parser bounded brackets and unary operators but not chains
// built by its loops, so a 60 KB template evaluated 30,000 levels deep and
// overflowed the stack (SIGSEGV) once a request took the branch holding it.
// Every chain is refused at parse, naming the line and the limit.
TEST(ChatJinja, LongChainsAreRefusedAtParse) {
  const std::string too_deep = "line 1: expression nests deeper than 128 levels";
  const std::string chains[] = {
      "messages" + repeated(".a", 30000),
      "messages" + repeated("[0]", 30000),
      "messages" + repeated("|string", 30000),
      "messages" + repeated("|trim()", 30000),
      "range" + repeated("()", 30000),
      "messages" + repeated("[0].a()", 10000) + repeated("|string", 10000),
      "messages" + repeated("[1:][0]", 10000),
      "1" + repeated(" + 1", 30000),
      "'a'" + repeated(" ~ 'a'", 30000),
      "true" + repeated(" and true", 30000),
      "1" + repeated(" == 1", 30000),
      "1" + repeated(" if true", 30000),
      "messages" + repeated(" is defined", 30000),
  };
  for (const std::string& chain : chains) {
    const std::string source = boom_branch(chain);
    EXPECT_NE(error_for(source, "BOOM").find(too_deep), std::string::npos) << chain.substr(0, 40);
    EXPECT_THROW(ChatTemplate::parse(source), TemplateError) << chain.substr(0, 40);
  }
  // Up to the limit, chains parse and render.
  const int links = jinja::kMaxExprHeight - 1;  // 'a' is the first level
  EXPECT_EQ(render("{{ 'a'" + repeated("|string", links) + " }}"), "a");
  EXPECT_EQ(render("{{ 0" + repeated(" + 1", links) + " }}"), std::to_string(links));
  EXPECT_NE(error_of("{{ 'a'" + repeated("|string", links + 1) + " }}").find(too_deep),
            std::string::npos);
}

// The second line of defence: whatever mix of blocks, expressions and macro
// calls, evaluation stops at RenderLimits::max_eval_depth levels.
TEST(ChatJinja, EvaluationDepthIsBoundedAcrossMacroCalls) {
  // 60 nested blocks per call: 1,024 levels are reached before 32 calls.
  const std::string recursive = "{% macro f(n) %}" + repeated("{% if true %}", 60) +
                                "{{ f(n + 1) }}" + repeated("{% endif %}", 60) +
                                "{% endmacro %}{{ f(0) }}";
  EXPECT_NE(error_of(recursive).find("evaluation nests deeper than 1024 levels"),
            std::string::npos);
  jinja::RenderLimits shallow;
  shallow.max_eval_depth = 40;
  const std::string blocks = repeated("{% if true %}", 30) + "{{ 1" + repeated(" + 1", 20) + " }}" +
                             repeated("{% endif %}", 30);
  EXPECT_EQ(render(blocks), "21");
  EXPECT_NE(error_of(blocks, shallow).find("evaluation nests deeper than 40 levels"),
            std::string::npos);
}

// Renders `source` on a thread whose stack is `stack_bytes`; the error, or "".
std::string error_on_stack(const std::string& source, size_t stack_bytes) {
  struct Job {
    std::string source, error;
  } job{source, ""};
  auto run = [](void* p) -> void* {
    auto* j = static_cast<Job*>(p);
    j->error = error_of(j->source);
    return nullptr;
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, stack_bytes);
  pthread_t thread;
  EXPECT_EQ(pthread_create(&thread, &attr, run, &job), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  return job.error;
}

// The deepest render the limits allow (max_eval_depth levels of blocks,
// loops, filters or attribute chains, through a recursive macro) fits in a
// stack far smaller than the 8 MiB a thread gets by default: each level is
// a few small frames (jinja_renderer.cpp keeps them out of line).
TEST(ChatJinja, DeepestRenderFitsInASmallStack) {
#if KVFORGE_SANITIZED
  constexpr size_t kStack = size_t{4} << 20;  // AddressSanitizer's frames carry redzones
#else
  constexpr size_t kStack = size_t{1} << 20;
#endif
  const std::string bodies[] = {
      repeated("{% if true %}", 60) + "{{ f(n + 1) }}" + repeated("{% endif %}", 60),
      repeated("{% for x in [1] %}", 60) + "{{ f(n + 1) }}" + repeated("{% endfor %}", 60),
      "{{ f(n + 1)" + repeated("|string", 100) + " }}",
      "{{ f(n + 1)" + repeated(".a", 100) + " }}",
  };
  for (const std::string& body : bodies) {
    const std::string source = "{% macro f(n) %}" + body + "{% endmacro %}{{ f(0) }}";
    EXPECT_NE(error_on_stack(source, kStack).find("evaluation nests deeper than 1024 levels"),
              std::string::npos)
        << body.substr(0, 40);
  }
}

TEST(ChatJinja, RaiseExceptionCarriesTheTemplatesMessage) {
  try {
    render("{{ raise_exception('roles must alternate') }}");
    FAIL();
  } catch (const TemplateRaised& e) {
    EXPECT_STREQ(e.what(), "roles must alternate");
  }
}

TEST(ChatJinja, FallbackTemplate) {
  const ordered_json m = ordered_json::parse(
      R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": " Hi "}])");
  ChatTemplateInputs in;
  in.messages = m;
  EXPECT_EQ(ChatTemplate::fallback().render(in), "System: Be brief.\n\nUser: Hi\n\nAssistant:");
}

}  // namespace
}  // namespace kvforge
