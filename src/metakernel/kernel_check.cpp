// Static checks on a parsed kernel: everything that can be wrong with a kernel file regardless
// of the tensors it is applied to. Catching these at load time means a typo in a kernel file is
// reported with its line and column when Tapestry starts, not as a confusing failure later.
#include <fmt/format.h>

#include <set>

#include "tapestry/ir/dtype.h"
#include "tapestry/metakernel/hooks.h"
#include "tapestry/metakernel/loader.h"

namespace tapestry::metakernel {

namespace {

class Checker {
 public:
  explicit Checker(const Metakernel& kernel) : k_(kernel) {}

  void run() {
    check_names();
    check_params();
    for (const InputSpec& in : k_.inputs) check_input(in);
    check_group_ranks();
    for (const ParamSpec& p : k_.params) {
      if (p.default_expr) check_expr(*p.default_expr, "a parameter's default");
    }
    for (const LetSpec& let : k_.lets) check_let(let);
    for (const CheckSpec& c : k_.checks) check_expr(c.condition, "a check");
    for (const OutputSpec& out : k_.outputs) check_output(out);
    for (const SugarSpec& s : k_.sugar) check_expr(s.when, "a sugar condition");
    if (!k_.hook.empty()) {
      check_hook();
      return;
    }
    check_index();
    check_reductions();
    check_ipfs();
  }

 private:
  [[noreturn]] void fail(SourcePos pos, const std::string& message) const {
    throw LocatedError(pos.is_known() ? pos : k_.pos, k_.name + ": " + message);
  }

  void check_names() {
    std::set<std::string> ports;
    for (const InputSpec& in : k_.inputs) {
      if (!ports.insert(in.name).second)
        fail(in.pos, fmt::format("input {} is declared twice", in.name));
    }
    for (const OutputSpec& out : k_.outputs) {
      if (!ports.insert(out.name).second)
        fail(out.pos,
             fmt::format("{} is both an input and an output, or declared twice", out.name));
    }
    if (k_.outputs.empty()) fail(k_.pos, "a kernel needs at least one output");
    std::set<std::string> vars;
    for (const auto& [var, allowed] : k_.types) {
      if (!vars.insert(var).second)
        fail(k_.pos, fmt::format("type variable {} is declared twice", var));
    }
    for (const InputSpec& in : k_.inputs) check_dtype(in.dtype, true);
    for (const OutputSpec& out : k_.outputs) check_dtype(out.dtype, false);
  }

  void check_dtype(const DTypeSpec& spec, bool is_input) const {
    if (spec.fixed) return;
    if (!spec.param.empty()) {
      if (is_input) fail(spec.pos, "an input's dtype cannot come from a parameter");
      check_dtype_param(spec);
      return;
    }
    const bool declared = std::any_of(k_.types.begin(), k_.types.end(),
                                      [&](const auto& t) { return t.first == spec.var; });
    if (!declared)
      fail(spec.pos, fmt::format("type variable {} is not declared in 'types'", spec.var));
    if (is_input) return;
    const bool bound = std::any_of(k_.inputs.begin(), k_.inputs.end(),
                                   [&](const InputSpec& in) { return in.dtype.var == spec.var; });
    if (!bound)
      fail(spec.pos, fmt::format("output type {} is not the type of any input", spec.var));
  }

  // `dtype: {param: to}`: a str parameter whose choices are all dtype names (so a call's value
  // is checked against them before an output type is made from it).
  void check_dtype_param(const DTypeSpec& spec) const {
    const ParamSpec* p = k_.find_param(spec.param);
    if (p == nullptr) fail(spec.pos, fmt::format("dtype parameter {} is not declared", spec.param));
    if (p->type != ParamType::kStr || p->choices.empty()) {
      fail(spec.pos,
           fmt::format("dtype parameter {} must be a str parameter with choices", spec.param));
    }
    for (const std::string& choice : p->choices) {
      if (!ir::parse_tap_dtype(choice))
        fail(p->pos, fmt::format("choice '{}' of {} is not a dtype", choice, spec.param));
    }
  }

  void check_params() {
    std::set<std::string> seen;
    for (const ParamSpec& p : k_.params) {
      if (!seen.insert(p.name).second)
        fail(p.pos, fmt::format("parameter {} is declared twice", p.name));
      if (k_.find_input(p.name))
        fail(p.pos, fmt::format("{} is both a parameter and an input", p.name));
      if (p.type == ParamType::kAxis && !k_.find_input(p.axis_of)) {
        fail(p.pos, fmt::format("axis parameter {} needs 'of: <input>' naming an input", p.name));
      }
      if (!p.choices.empty() && p.type != ParamType::kStr)
        fail(p.pos, "only str parameters have choices");
      if (p.min && p.type != ParamType::kInt && p.type != ParamType::kInts)
        fail(p.pos, "only int and ints parameters have a min");
      if (p.sugar && !p.default_value)
        fail(p.pos, fmt::format("sugar parameter {} needs a default", p.name));
      if (p.type == ParamType::kMonoid && p.default_value &&
          !parse_monoid(p.default_value->get<std::string>())) {
        fail(p.pos, fmt::format("the default of {} is not a monoid (sum, max, min, prod)", p.name));
      }
      params_.insert(p.name);
    }
  }

  void check_input(const InputSpec& in) {
    std::set<std::string> groups_here;
    for (const ListEntry& e : in.shape) {
      if (e.kind == ListEntry::Kind::kGroup) {
        if (!groups_here.insert(e.group).second)
          fail(e.pos, fmt::format("group ${}... appears twice in one shape", e.group));
        if (dims_.count(e.group))
          fail(e.pos, fmt::format("{} is used both as a dimension and a group", e.group));
        groups_.insert(e.group);
      } else if (e.kind == ListEntry::Kind::kExpr && !e.window && e.is_dim()) {
        if (groups_.count(e.dim_name()))
          fail(e.pos, fmt::format("{} is used both as a dimension and a group", e.dim_name()));
        dims_.insert(e.dim_name());
      } else if (e.kind != ListEntry::Kind::kExpr || e.window ||
                 e.expr->kind() != Expr::Kind::kInt) {
        fail(e.pos, "an input shape admits only $name, $group... and integer literals");
      }
    }
  }

  void check_group_ranks() {
    for (const auto& [group, rank] : k_.group_ranks) {
      if (!groups_.count(group))
        fail(rank.pos(), fmt::format("group_ranks names ${}..., which no input shape has", group));
      rank.visit_names([&](Expr::Kind kind, const std::string& name, SourcePos pos) {
        if (kind != Expr::Kind::kParam) fail(pos, "a group rank may use only parameters");
        if (!params_.count(name)) fail(pos, fmt::format("unknown parameter {}", name));
      });
    }
    for (const std::string& g : k_.broadcast) {
      if (!groups_.count(g))
        fail(k_.pos, fmt::format("broadcast names ${}..., which no input shape has", g));
    }
  }

  void check_let(const LetSpec& let) {
    if (dims_.count(let.name) || groups_.count(let.name)) {
      fail(let.value.pos(), fmt::format("let {} redefines a pattern dimension", let.name));
    }
    check_expr(let.value, "a let");
    dims_.insert(let.name);
  }

  // Every $name / #name must be a bound dimension, every bare name a parameter.
  void check_expr(const Expr& e, std::string_view where) const {
    e.visit_names([&](Expr::Kind kind, const std::string& name, SourcePos pos) {
      if (kind == Expr::Kind::kParam) {
        if (!params_.count(name))
          fail(pos, fmt::format("unknown parameter '{}' in {}", name, where));
      } else if (!dims_.count(name)) {
        const std::string hint =
            groups_.count(name) ? " (it is a group: write $" + name + "...)" : "";
        fail(pos, fmt::format("unknown dimension ${} in {}{}", name, where, hint));
      }
    });
  }

  void check_output(const OutputSpec& out) {
    if (!out.has_shape && k_.hook.empty())
      fail(out.pos, fmt::format("output {} needs a shape", out.name));
    for (const ListEntry& e : out.shape) {
      if (e.kind == ListEntry::Kind::kGroup) {
        if (!groups_.count(e.group)) fail(e.pos, fmt::format("unknown group ${}...", e.group));
      } else if (e.kind == ListEntry::Kind::kWhole || e.window) {
        fail(e.pos, "an output shape admits $name, $group... and size expressions");
      } else {
        check_expr(*e.expr, "an output shape");
      }
    }
    if (!out.start) return;
    if (!k_.find_input(out.start->like))
      fail(out.pos, fmt::format("start.like names {}, which is not an input", out.start->like));
    for (const ListEntry& e : out.start->shift) {
      if (e.kind != ListEntry::Kind::kExpr || e.window)
        fail(e.pos, "start.shift admits expressions only");
      check_expr(*e.expr, "start.shift");
    }
  }

  void check_hook() const {
    if (!find_hook(k_.hook)) {
      fail(k_.pos,
           fmt::format("unknown hook '{}' (hooks: {})", k_.hook, fmt::join(hook_names(), ", ")));
    }
    if (!k_.index.empty() || !k_.ipfs.empty() || !k_.reductions.empty()) {
      fail(k_.pos, "a hook kernel gets its index, reductions and IPFs from the hook; remove them");
    }
  }

  void check_index() {
    for (const ListEntry& e : k_.index) {
      if (e.kind == ListEntry::Kind::kGroup) {
        if (!groups_.count(e.group))
          fail(e.pos, fmt::format("unknown group ${}... in the index", e.group));
      } else if (!e.is_dim()) {
        fail(e.pos, "the index admits only $name and $group... entries");
      } else if (!dims_.count(e.dim_name())) {
        fail(e.pos, fmt::format("unknown dimension ${} in the index", e.dim_name()));
      }
      if (!index_names_.insert(e.dim_name()).second)
        fail(e.pos, fmt::format("{} appears twice in the index", e.dim_name()));
    }
  }

  void check_reductions() {
    for (const ReductionSpec& r : k_.reductions) {
      if (!index_names_.count(r.dim))
        fail(r.pos, fmt::format("reduction {} is not in the index", r.dim));
      if (!r.monoid) {
        const ParamSpec* p = k_.find_param(r.param);
        if (!p || p->type != ParamType::kMonoid) {
          fail(r.pos, fmt::format("reduction {}: '{}' is neither a monoid (sum, max, min, prod) "
                                  "nor a monoid parameter",
                                  r.dim, r.param));
        }
      }
      reductions_.insert(r.dim);
    }
  }

  void check_ipfs() const {
    for (const auto& entry : k_.ipfs) {
      const std::string& port = entry.first;  // not a structured binding: lambdas capture it
      const List& list = entry.second;
      const bool is_output = std::any_of(k_.outputs.begin(), k_.outputs.end(),
                                         [&](const OutputSpec& o) { return o.name == port; });
      if (!is_output && !k_.find_input(port))
        fail(list.empty() ? k_.pos : list.front().pos,
             fmt::format("ipfs names {}, which is neither an input nor an output", port));
      for (const ListEntry& e : list) check_ipf_entry(e, is_output);
    }
    for (const InputSpec& in : k_.inputs) {
      if (!k_.ipfs.count(in.name))
        fail(in.pos, fmt::format("input {} has no IPF (add it under 'ipfs')", in.name));
    }
    for (const OutputSpec& out : k_.outputs) {
      if (!k_.ipfs.count(out.name))
        fail(out.pos, fmt::format("output {} has no IPF (add it under 'ipfs')", out.name));
    }
  }

  void check_ipf_entry(const ListEntry& e, bool is_output) const {
    if (e.kind == ListEntry::Kind::kWhole) return;
    if (e.kind == ListEntry::Kind::kGroup) {
      if (!index_names_.count(e.group) || !groups_.count(e.group))
        fail(e.pos, fmt::format("${}... is not a group of the index", e.group));
      if (is_output && reductions_.count(e.group))
        fail(e.pos, fmt::format("an output IPF must not move along the reduction ${}...", e.group));
      return;
    }
    e.expr->visit_names([&](Expr::Kind kind, const std::string& name, SourcePos pos) {
      if (kind == Expr::Kind::kParam && !params_.count(name))
        fail(pos, fmt::format("unknown parameter '{}'", name));
      if (kind == Expr::Kind::kSize && !dims_.count(name))
        fail(pos, fmt::format("unknown dimension #{}", name));
      if (kind != Expr::Kind::kDim) return;
      if (!index_names_.count(name) || groups_.count(name)) {
        fail(pos,
             fmt::format("${} in an IPF offset must be an index dimension (write #{} for a size)",
                         name, name));
      }
      if (is_output && reductions_.count(name))
        fail(pos, fmt::format("an output IPF must not move along the reduction ${}", name));
    });
    if (e.window) check_expr(*e.window, "an IPF window");
  }

  const Metakernel& k_;
  std::set<std::string> params_, dims_, groups_, index_names_, reductions_;
};

}  // namespace

void check_kernel(const Metakernel& kernel) {
  Checker(kernel).run();
}

}  // namespace tapestry::metakernel
