#include "app/chat/jinja_renderer.h"

#include <unordered_map>

#include "app/chat/jinja_builtins.h"
#include "app/chat/jinja_error.h"
#include "app/chat/python_format.h"

namespace kvforge::jinja {
namespace {

enum class Flow { kNormal, kBreak, kContinue };

class Renderer {
 public:
  Renderer(const Object& globals, const RenderLimits& limits, RenderBudget& budget)
      : limits_(limits), budget_(budget) {
    scopes_.emplace_back();
    for (const auto& [k, v] : globals) scopes_.back()[k] = v;
  }

  std::string run(const NodeList& root) {
    exec(root);
    return std::move(out_);
  }

 private:
  using Scope = std::unordered_map<std::string, Value>;

  // ---- state ------------------------------------------------------------

  // Counts the statements and expressions being evaluated, one inside the
  // other, across macro calls: the parser bounds each tree's height, and this
  // bounds the stack they take together (a macro's body inside an expression
  // inside a block...).
  class EvalDepth {
   public:
    EvalDepth(Renderer& r, int line) : r_(r) {
      if (++r_.eval_depth_ > r_.limits_.max_eval_depth) {
        --r_.eval_depth_;
        throw TemplateError(line, "template evaluation nests deeper than " +
                                      std::to_string(r_.limits_.max_eval_depth) +
                                      " levels (blocks, expressions and macro calls together)");
      }
    }
    ~EvalDepth() { --r_.eval_depth_; }
    EvalDepth(const EvalDepth&) = delete;
    EvalDepth& operator=(const EvalDepth&) = delete;

   private:
    Renderer& r_;
  };

  void step(int line) { budget_.work(RenderBudget::kStepUnits, line); }

  void emit(const std::string& s, int line) {
    if (out_.size() + s.size() > limits_.max_output_bytes)
      throw TemplateError(
          line, "template output exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
    budget_.bytes(s.size(), line);
    out_ += s;
  }

  // Innermost scope first, down to the current call barrier, then the global scope.
  Value lookup(const std::string& name) const {
    for (size_t i = scopes_.size(); i-- > barrier_;) {
      const auto it = scopes_[i].find(name);
      if (it != scopes_[i].end()) return it->second;
    }
    if (barrier_ > 0) {
      const auto it = scopes_[0].find(name);
      if (it != scopes_[0].end()) return it->second;
    }
    return Value::undefined(name);
  }

  // ---- statements -------------------------------------------------------
  //
  // exec/exec_node and eval/eval_unchecked are the recursion: each level of
  // a template's nesting is one frame of each. What a construct needs beyond
  // dispatch lives in its own function, kept out of line ([[gnu::noinline]]),
  // so those frames stay small: max_eval_depth times their size is the stack
  // a render may take.

  Flow exec(const NodeList& nodes) {
    for (const NodePtr& n : nodes) {
      const Flow f = exec_node(*n);
      if (f != Flow::kNormal) return f;
    }
    return Flow::kNormal;
  }

  Flow exec_node(const Node& n) {
    const EvalDepth depth(*this, n.line);
    switch (n.kind) {
      case Node::Kind::kText:
        emit(n.text, n.line);
        return Flow::kNormal;
      case Node::Kind::kOutput:
        exec_output(n);
        return Flow::kNormal;
      case Node::Kind::kIf:
        for (size_t i = 0; i < n.conditions.size(); ++i)
          if (eval_truthy(*n.conditions[i])) return exec(n.bodies[i]);
        if (n.bodies.size() > n.conditions.size()) return exec(n.bodies.back());
        return Flow::kNormal;
      case Node::Kind::kFor:
        exec_for(n);
        return Flow::kNormal;
      case Node::Kind::kSet:
        exec_set(n);
        return Flow::kNormal;
      case Node::Kind::kSetBlock:
        exec_set_block(n);
        return Flow::kNormal;
      case Node::Kind::kMacro:
        scopes_.back()[n.text] = make_macro(n);
        return Flow::kNormal;
      case Node::Kind::kBreak:
        return Flow::kBreak;
      case Node::Kind::kContinue:
        return Flow::kContinue;
      case Node::Kind::kScope:
        return exec(n.bodies[0]);
    }
    return Flow::kNormal;
  }

  [[gnu::noinline]] void exec_output(const Node& n) {
    step(n.line);
    emit(python_str(eval(*n.expr)), n.line);
  }

  [[gnu::noinline]] bool eval_truthy(const Expr& e) { return eval(e).truthy(); }

  [[gnu::noinline]] void exec_set_block(const Node& n) {
    std::string saved = std::move(out_);
    out_.clear();
    exec(n.bodies[0]);
    std::string captured = std::move(out_);
    out_ = std::move(saved);
    scopes_.back()[n.targets[0]] = Value(std::move(captured));
  }

  void bind_targets(const Node& n, const Value& item) {
    Scope& scope = scopes_.back();
    if (n.targets.size() == 1) {
      scope[n.targets[0]] = item;
      return;
    }
    const Array parts = iterate(item, n.line);
    if (parts.size() != n.targets.size())
      throw TemplateError(n.line, "cannot unpack " + std::to_string(parts.size()) +
                                      " values into " + std::to_string(n.targets.size()) +
                                      " loop variables");
    for (size_t i = 0; i < parts.size(); ++i) scope[n.targets[i]] = parts[i];
  }

  [[gnu::noinline]] void exec_for(const Node& n) {
    Array items = iterate(eval(*n.expr), n.line);
    if (!n.conditions.empty()) {  // `for x in xs if cond`: loop.* counts kept items only
      Array kept;
      for (const Value& item : items) {
        step(n.line);
        scopes_.emplace_back();
        bind_targets(n, item);
        const bool keep = eval(*n.conditions[0]).truthy();
        scopes_.pop_back();
        if (keep) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      if (n.bodies.size() > 1) exec(n.bodies[1]);
      return;
    }
    const int64_t len = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < len; ++i) {
      step(n.line);
      scopes_.emplace_back();
      bind_targets(n, items[static_cast<size_t>(i)]);
      scopes_.back()["loop"] = loop_object(items, i);
      const Flow f = exec(n.bodies[0]);
      scopes_.pop_back();
      if (f == Flow::kBreak) break;
    }
  }

  [[gnu::noinline]] static Value loop_object(const Array& items, int64_t i) {
    const int64_t len = static_cast<int64_t>(items.size());
    Object loop{
        {"index", Value(i + 1)},
        {"index0", Value(i)},
        {"revindex", Value(len - i)},
        {"revindex0", Value(len - i - 1)},
        {"first", Value(i == 0)},
        {"last", Value(i == len - 1)},
        {"length", Value(len)},
        {"depth", Value(1)},
        {"depth0", Value(0)},
        {"previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("previtem")},
        {"nextitem",
         i + 1 < len ? items[static_cast<size_t>(i + 1)] : Value::undefined("nextitem")}};
    loop.emplace_back("cycle", Value::function("loop.cycle", [i](const CallArgs& args) {
                        if (args.positional.empty()) return Value::undefined("cycle");
                        return args.positional[static_cast<size_t>(i) % args.positional.size()];
                      }));
    return Value(std::move(loop));
  }

  [[gnu::noinline]] void exec_set(const Node& n) {
    Value v = eval(*n.expr);
    if (n.attribute.empty()) {
      scopes_.back()[n.targets[0]] = std::move(v);
      return;
    }
    const Value target = lookup(n.targets[0]);
    if (!target.is_namespace())
      throw TemplateError(n.line, "cannot set attribute '" + n.attribute + "' of '" + n.targets[0] +
                                      "': not a namespace()");
    if (v.holds_namespace())
      throw TemplateError(n.line,
                          "cannot store a namespace inside namespace '" + n.targets[0] + "'");
    Object& ns = target.mutable_namespace();
    for (auto& [k, existing] : ns) {
      if (k == n.attribute) {
        existing = std::move(v);
        return;
      }
    }
    ns.emplace_back(n.attribute, std::move(v));
  }

  [[gnu::noinline]] Value make_macro(const Node& n) {
    const Node* macro = &n;
    return Value::function(
        n.text, [this, macro](const CallArgs& args) { return call_macro(*macro, args); });
  }

  Value call_macro(const Node& m, const CallArgs& args) {
    step(m.line);
    if (call_depth_ >= limits_.max_call_depth)
      throw TemplateError(m.line, "macro '" + m.text + "' nested deeper than " +
                                      std::to_string(limits_.max_call_depth) + " calls");
    if (args.positional.size() > m.params.size())
      throw TemplateError(m.line, "macro '" + m.text + "' takes " +
                                      std::to_string(m.params.size()) + " arguments, got " +
                                      std::to_string(args.positional.size()));
    const size_t saved_barrier = barrier_;
    barrier_ = scopes_.size();
    scopes_.emplace_back();
    ++call_depth_;
    std::string saved_out = std::move(out_);
    out_.clear();
    for (size_t i = 0; i < m.params.size(); ++i) {
      const MacroParam& p = m.params[i];
      Value v;
      bool bound = false;
      if (i < args.positional.size()) {
        v = args.positional[i];
        bound = true;
      }
      for (const auto& [k, kv] : args.keyword) {
        if (k == p.name) {
          v = kv;
          bound = true;
        }
      }
      if (!bound && p.default_value) v = eval(*p.default_value);
      scopes_.back()[p.name] = v.is_undefined() ? Value::undefined(p.name) : v;
    }
    for (const auto& [k, kv] : args.keyword) {
      bool known = false;
      for (const MacroParam& p : m.params) known = known || p.name == k;
      if (!known)
        throw TemplateError(m.line, "macro '" + m.text + "' has no parameter '" + k + "'");
    }
    exec(m.bodies[0]);
    std::string result = std::move(out_);
    out_ = std::move(saved_out);
    --call_depth_;
    scopes_.pop_back();
    barrier_ = saved_barrier;
    return Value(std::move(result));
  }

  // ---- expressions ------------------------------------------------------

  CallArgs eval_args(const Expr& e) {
    CallArgs args;
    for (const ExprPtr& a : e.items) args.positional.push_back(eval(*a));
    for (const KeywordArg& kw : e.keywords) args.keyword.emplace_back(kw.name, eval(*kw.value));
    return args;
  }

  Value eval(const Expr& e) {
    const EvalDepth depth(*this, e.line);
    try {
      Value v = eval_unchecked(e);
      charge_result(e, v);
      return v;
    } catch (const std::length_error& err) {
      throw TemplateError(e.line, err.what());
    }
  }

  // Every value an expression yields is charged: a string is a copy of its
  // bytes; a list or dict is a fresh container when the expression built it,
  // a shared pointer when it was only looked up.
  void charge_result(const Expr& e, const Value& v) {
    if (v.is_string()) {
      budget_.bytes(v.as_string().size(), e.line);
      return;
    }
    const bool looked_up = e.kind == Expr::Kind::kLiteral || e.kind == Expr::Kind::kName ||
                           e.kind == Expr::Kind::kGetAttr || e.kind == Expr::Kind::kGetItem;
    if (looked_up || !(v.is_array() || v.is_object())) {
      budget_.work(1, e.line);
      return;
    }
    const size_t n = v.is_array() ? v.as_array().size() : v.as_object().size();
    budget_.bytes(n * sizeof(Value), e.line);
  }

  Value eval_unchecked(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.value;
      case Expr::Kind::kName:
        return lookup(e.name);
      case Expr::Kind::kList:
        return eval_list(e);
      case Expr::Kind::kDict:
        return eval_dict(e);
      case Expr::Kind::kGetAttr:
        return eval_get_attr(e);
      case Expr::Kind::kGetItem:
        return eval_get_item(e);
      case Expr::Kind::kSlice:
        return eval_slice(e);
      case Expr::Kind::kCall:
        return eval_call(e);
      case Expr::Kind::kFilter:
        return eval_filter(e);
      case Expr::Kind::kTest:
        return eval_test(e);
      case Expr::Kind::kUnary:
        return eval_unary(e);
      case Expr::Kind::kBinary:
        return eval_binary(e);
      case Expr::Kind::kCondition:
        if (eval_truthy(*e.target)) return eval(*e.items[0]);
        return e.items[1] ? eval(*e.items[1]) : Value::undefined("else");
    }
    return Value();
  }

  [[gnu::noinline]] Value eval_list(const Expr& e) {
    Array items;
    for (const ExprPtr& item : e.items) items.push_back(eval(*item));
    return Value(std::move(items));
  }

  [[gnu::noinline]] Value eval_dict(const Expr& e) {
    Object obj;
    for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
      const Value key = eval(*e.items[i]);
      if (!key.is_string())
        throw TemplateError(e.line, "dict keys must be strings, got " + key.type_name());
      Value val = eval(*e.items[i + 1]);
      bool replaced = false;
      for (auto& [k, v] : obj) {
        if (k == key.as_string()) {
          v = val;
          replaced = true;
        }
      }
      if (!replaced) obj.emplace_back(key.as_string(), std::move(val));
    }
    return Value(std::move(obj));
  }

  [[gnu::noinline]] Value eval_get_attr(const Expr& e) {
    return get_attr(eval(*e.target), e.name, e.line);
  }

  [[gnu::noinline]] Value eval_get_item(const Expr& e) {
    const Value target = eval(*e.target);
    return get_item(target, eval(*e.items[0]), e.line);
  }

  [[gnu::noinline]] Value eval_slice(const Expr& e) {
    const Value target = eval(*e.target);
    auto part = [&](size_t i) { return e.items[i] ? eval(*e.items[i]) : Value(); };
    return get_slice(target, part(0), part(1), part(2), e.line);
  }

  [[gnu::noinline]] Value eval_filter(const Expr& e) {
    const Value target = eval(*e.target);
    return apply_filter(e.name, target, eval_args(e), e.line);
  }

  [[gnu::noinline]] Value eval_test(const Expr& e) {
    const Value target = eval(*e.target);
    return Value(apply_test(e.name, target, eval_args(e), e.line) != e.negated);
  }

  [[gnu::noinline]] Value eval_binary(const Expr& e) {
    const Value left = eval(*e.target);
    if (e.name == "and") return left.truthy() ? eval(*e.items[0]) : left;
    if (e.name == "or") return left.truthy() ? left : eval(*e.items[0]);
    return apply_binary(e.name, left, eval(*e.items[0]), e.line);
  }

  static Value get_attr(const Value& obj, const std::string& name, int line) {
    if (obj.is_undefined())
      throw TemplateError(line, "'" + obj.undefined_name() + "' is undefined");
    if (obj.is_object()) {
      const Value* hit = obj.find(name);
      return hit ? *hit : Value::undefined(name);
    }
    return Value::undefined(name);
  }

  [[gnu::noinline]] Value eval_call(const Expr& e) {
    if (e.target->kind == Expr::Kind::kGetAttr) {
      const Value obj = eval(*e.target->target);
      const Value* member = obj.is_object() ? obj.find(e.target->name) : nullptr;
      if (!member) return call_method(obj, e.target->name, eval_args(e), e.line);
      return call_function(*member, e.target->name, e);
    }
    const Value callee = eval(*e.target);
    return call_function(callee,
                         e.target->kind == Expr::Kind::kName ? e.target->name : "expression", e);
  }

  Value call_function(const Value& callee, const std::string& name, const Expr& e) {
    if (callee.is_undefined()) throw TemplateError(e.line, "'" + name + "' is undefined");
    if (!callee.is_function())
      throw TemplateError(e.line, "'" + name + "' (" + callee.type_name() + ") is not callable");
    const CallArgs args = eval_args(e);
    try {
      return callee.as_function().call(args);
    } catch (const std::invalid_argument& err) {
      throw TemplateError(e.line, name + "(): " + err.what());
    }
  }

  [[gnu::noinline]] Value eval_unary(const Expr& e) {
    const Value v = eval(*e.target);
    if (e.name == "not") return Value(!v.truthy());
    if (v.kind() == Value::Kind::kBool)
      return Value(int64_t{e.name == "-" ? -int64_t{v.as_bool()} : v.as_bool()});
    if (v.is_int()) {
      if (e.name == "+") return v;
      if (v.as_int() == INT64_MIN) throw TemplateError(e.line, "integer overflow in unary -");
      return Value(-v.as_int());
    }
    if (v.is_number()) return Value(e.name == "-" ? -v.as_number() : v.as_number());
    throw TemplateError(e.line, "bad operand type for unary " + e.name + ": " + v.type_name());
  }

  const RenderLimits& limits_;
  RenderBudget& budget_;
  std::vector<Scope> scopes_;
  size_t barrier_ = 0;  // scopes below it (except the global one) are invisible: a macro call
  int call_depth_ = 0;
  int eval_depth_ = 0;
  std::string out_;
};

}  // namespace

std::string render_template(const NodeList& root, const Object& globals, const RenderLimits& limits,
                            RenderUsage* usage) {
  RenderBudget budget(limits);
  const BudgetScope scope(budget);
  try {
    std::string out = Renderer(globals, limits, budget).run(root);
    if (usage) *usage = budget.usage();
    return out;
  } catch (...) {
    if (usage) *usage = budget.usage();  // what a stopped render had used, for the tests
    throw;
  }
}

}  // namespace kvforge::jinja
