// The .tap front end: run the statements of a program on a builder Graph.
#include "tapestry/metakernel/tap_frontend.h"

#include <fmt/core.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "tapestry/metakernel/autodiff.h"
#include "tapestry/metakernel/builder.h"
#include "tapestry/metakernel/tap_parser.h"
#include "tapestry/support/file.h"

namespace tapestry::metakernel {

namespace {

// Thrown when an expression uses a variable whose own statement failed: the statement fails
// too, silently (its cause is already reported).
struct Poisoned {};

class Frontend {
 public:
  Frontend(const tap::Program& program, const SignatureRegistry& signatures,
           const ApplyOptions& options)
      : program_(program), graph_(signatures, options) {}

  BuildResult run() {
    for (const tap::Statement& statement : program_.statements) {
      try {
        std::visit([this](const auto& s) { this->statement(s); }, statement);
      } catch (const LocatedError& e) {
        report(e.pos(), e.what());
      } catch (const Poisoned&) {
      }
    }
    BuildResult result;
    result.diagnostics = std::move(diagnostics_);
    result.warnings = std::move(warnings_);
    if (result.diagnostics.empty()) result.graph = graph_.take();
    return result;
  }

 private:
  void report(SourcePos pos, std::string message) {
    diagnostics_.push_back(support::Diagnostic::at_source(program_.file, pos, std::move(message)));
  }

  void define(const std::string& name, SourcePos pos) {
    if (auto it = defined_at_.find(name); it != defined_at_.end()) {
      throw LocatedError(pos,
                         fmt::format("{} is already defined (line {})", name, it->second.line));
    }
    defined_at_[name] = pos;
  }

  void statement(const tap::Decl& decl) {
    define(decl.name, decl.pos);
    variables_[decl.name] = at(decl.pos, [&] {
      return decl.dtype == ir::LoomDType(decl.type.dtype)
                 ? graph_.input(decl.name, decl.type)
                 : graph_.declare(decl.name, decl.dtype, decl.type.range);
    });
  }

  void statement(const tap::OperationStmt& op) {
    at(op.pos, [&] {
      graph_.add_verbatim(op.node, [this](std::string_view name) -> std::optional<Tensor> {
        if (poisoned_.count(std::string(name))) throw Poisoned{};
        const auto it = variables_.find(std::string(name));
        return it == variables_.end() ? std::nullopt : std::optional(it->second);
      });
      return Tensor();
    });
  }

  // The name is poisoned only once its statement has failed, not while its value is evaluated:
  // `A = add(X, A)` uses A before it exists, "unknown variable 'A'", not a silent poison.
  void statement(const tap::Assign& assign) {
    if (assign.value.is_call() && assign.value.call->callee == "grad")
      return grad_statement(assign);
    if (!assign.more_names.empty()) {
      throw LocatedError(assign.more_names.front().pos, "only grad(...) assigns several variables");
    }
    define(assign.name, assign.pos);
    try {
      if (!assign.value.is_call()) {
        throw LocatedError(assign.value.pos,
                           fmt::format("{} = {} assigns no operation: use {} directly", assign.name,
                                       assign.value.name, assign.value.name));
      }
      const Tensor value = evaluate(assign.value);
      variables_[assign.name] = at(assign.pos, [&] { return graph_.assign(assign.name, value); });
    } catch (...) {
      poisoned_.insert(assign.name);
      throw;
    }
  }

  // `dW, db = grad(L, W, b)` or `dW = grad(Y, W, seed=S)`: one variable per tensor after the
  // loss, each the gradient's name (autodiff.h).
  void grad_statement(const tap::Assign& assign) {
    std::vector<tap::OutputName> targets{tap::OutputName{assign.name, assign.pos}};
    targets.insert(targets.end(), assign.more_names.begin(), assign.more_names.end());
    for (const tap::OutputName& t : targets) define(t.name, t.pos);
    try {
      const tap::Call& call = *assign.value.call;
      if (call.args.size() < 2) {
        throw LocatedError(call.pos,
                           "grad takes the loss and at least one tensor: "
                           "grad(L, W1, b1)");
      }
      if (call.args.size() - 1 != targets.size()) {
        throw LocatedError(assign.pos,
                           fmt::format("grad of {} tensors assigns {} variables; give one per "
                                       "tensor",
                                       call.args.size() - 1, targets.size()));
      }
      const Tensor loss = evaluate(call.args.front());
      std::vector<Tensor> wrt;
      for (std::size_t i = 1; i < call.args.size(); ++i) wrt.push_back(evaluate(call.args[i]));
      GradOptions options;
      for (const tap::Keyword& k : call.keywords) {
        if (k.name != "seed" || !k.value.is_identifier) {
          throw LocatedError(k.pos, fmt::format("grad: unknown parameter {} (grad takes "
                                                "seed=VARIABLE, the loss's cotangent)",
                                                k.name));
        }
        options.seed =
            evaluate(tap::TensorExpr{k.value.value.get<std::string>(), nullptr, k.value.pos});
      }
      for (const tap::OutputName& t : targets) options.names.push_back(t.name);
      std::vector<ir::Issue> issues;
      options.issues = &issues;
      std::vector<Tensor> grads;
      at(call.pos, [&] {
        grads = graph_.grad(loss, wrt, options);
        return Tensor();
      });
      for (std::size_t i = 0; i < targets.size(); ++i) variables_[targets[i].name] = grads[i];
      for (const ir::Issue& issue : issues) {
        support::Diagnostic warning = support::Diagnostic::at_source(
            program_.file, call.pos, fmt::format("{}: {}", issue.summary, issue.message));
        warning.severity = support::Severity::kWarning;
        warnings_.push_back(std::move(warning));
      }
    } catch (...) {
      for (const tap::OutputName& t : targets) poisoned_.insert(t.name);
      throw;
    }
  }

  void statement(const tap::Output& output) {
    for (const tap::OutputName& name : output.names) {
      if (poisoned_.count(name.name)) continue;
      const std::optional<Tensor> value = variable(name.name);
      if (!value) {
        report(name.pos, fmt::format("output {}: no such variable", name.name));
        continue;
      }
      graph_.output(*value);
    }
  }

  void statement(const tap::Update& update) {
    for (const tap::UpdatePair& pair : update.pairs) {
      if (poisoned_.count(pair.state.name) || poisoned_.count(pair.next.name)) continue;
      std::optional<Tensor> tensors[2];
      for (int i = 0; i < 2; ++i) {
        const tap::OutputName& name = i == 0 ? pair.state : pair.next;
        // A variable, or a tensor by its label (another output of an operation: S.m_next).
        const auto it = variables_.find(name.name);
        tensors[i] = it != variables_.end() ? std::optional(it->second) : graph_.find(name.name);
        if (!tensors[i]) report(name.pos, fmt::format("update {}: no such tensor", name.name));
      }
      if (!tensors[0] || !tensors[1]) continue;
      try {
        graph_.update(*tensors[0], *tensors[1]);
      } catch (const Error& e) {
        report(pair.state.pos, e.what());
      }
    }
  }

  // A variable, or `S.<port>`: another output of the operation assigned to S (`S =
  // adam(…)` is S.result; S.m_next and S.v_next are its other outputs).
  std::optional<Tensor> variable(const std::string& name) {
    if (const auto it = variables_.find(name); it != variables_.end()) return it->second;
    const std::size_t dot = name.rfind('.');
    if (dot == std::string::npos || !variables_.count(name.substr(0, dot))) return std::nullopt;
    return graph_.find(name);
  }

  Tensor evaluate(const tap::TensorExpr& expr) {
    if (!expr.is_call()) {
      if (poisoned_.count(expr.name)) throw Poisoned{};
      const std::optional<Tensor> value = variable(expr.name);
      if (!value) throw LocatedError(expr.pos, fmt::format("unknown variable '{}'", expr.name));
      return *value;
    }
    const tap::Call& call = *expr.call;
    if (call.callee == "grad") {
      throw LocatedError(call.pos, "grad(...) is a statement of its own: dW, db = grad(L, W, b)");
    }
    std::vector<Tensor> args;
    for (const tap::TensorExpr& arg : call.args) args.push_back(evaluate(arg));
    nlohmann::json params = nlohmann::json::object();
    for (const tap::Keyword& k : call.keywords) {
      if (params.contains(k.name))
        throw LocatedError(k.pos, fmt::format("parameter {} is given twice", k.name));
      params[k.name] = k.value.value;
    }
    return at(call.pos, [&] { return graph_.call(call.callee, args, params); });
  }

  // Runs `f`, turning a tapestry::Error into a LocatedError at `pos`.
  template <typename F>
  Tensor at(SourcePos pos, F&& f) {
    try {
      return f();
    } catch (const LocatedError&) {
      throw;
    } catch (const Error& e) {
      throw LocatedError(pos, e.what());
    }
  }

  const tap::Program& program_;
  Graph graph_;
  std::map<std::string, Tensor> variables_;
  std::map<std::string, SourcePos> defined_at_;
  std::set<std::string> poisoned_;
  std::vector<support::Diagnostic> diagnostics_;
  std::vector<support::Diagnostic> warnings_;
};

}  // namespace

BuildResult build_program(const tap::Program& program, const SignatureRegistry& signatures,
                          const ApplyOptions& options) {
  return Frontend(program, signatures, options).run();
}

BuildResult build_tap(const SourceFilePtr& file, const SignatureRegistry& signatures,
                      const ApplyOptions& options, const tap::ParseOptions& parse) {
  tap::ParseResult parsed = tap::parse_program(file, parse);
  if (!parsed.ok()) return BuildResult{std::nullopt, std::move(parsed.diagnostics)};
  return build_program(parsed.program, signatures, options);
}

ir::ValidationReport validate_built_graph(const ir::Graph& graph) {
  return ir::validate(
      graph, graph.applications().empty() ? ir::Dialect::operation() : ir::Dialect::application());
}

SourceFilePtr read_source_file(const std::filesystem::path& path) {
  return std::make_shared<const SourceFile>(path.string(), read_file(path));
}

BuildResult build_tap_file(const std::filesystem::path& path, const SignatureRegistry& signatures,
                           const ApplyOptions& options, const tap::ParseOptions& parse) {
  SourceFilePtr file;
  try {
    file = read_source_file(path);
  } catch (const Error& e) {
    return BuildResult{std::nullopt, {support::Diagnostic{.message = e.what()}}};
  }
  return build_tap(file, signatures, options, parse);
}

}  // namespace tapestry::metakernel
