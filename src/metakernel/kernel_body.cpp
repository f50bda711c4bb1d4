// The kernel-body expression language (kernel_body.h): a recursive-descent parser.
#include "tapestry/metakernel/kernel_body.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "tapestry/support/error.h"

namespace tapestry::metakernel {

namespace {

constexpr BodyFunction kFunctions[] = {{"exp", 1},  {"tanh", 1}, {"sigmoid", 1}, {"relu", 1},
                                       {"gelu", 1}, {"neg", 1},  {"max", 2},     {"min", 2}};
constexpr int kMaxDepth = 100;

class BodyParser {
 public:
  explicit BodyParser(std::string_view text) : text_(text) {}

  BodyExpr run() {
    BodyExpr e = expr(0);
    skip_blanks();
    if (i_ < text_.size()) fail(fmt::format("unexpected '{}'", text_[i_]));
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw Error(fmt::format("column {}: {}", i_ + 1, message));
  }
  void skip_blanks() {
    while (i_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[i_]))) ++i_;
  }
  bool accept(char c) {
    skip_blanks();
    if (i_ < text_.size() && text_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c, std::string_view context) {
    if (!accept(c)) fail(fmt::format("expected '{}' {}", c, context));
  }

  BodyExpr expr(int depth) {
    if (depth > kMaxDepth) fail("the expression nests too deeply");
    BodyExpr left = term(depth);
    while (true) {
      skip_blanks();
      const std::size_t column = i_ + 1;
      if (!accept('+') && !accept('-')) return left;
      const char op = text_[i_ - 1];  // before the operand moves i_ on
      BodyExpr right = term(depth);
      left = binary(op, std::move(left), std::move(right), column);
    }
  }

  BodyExpr term(int depth) {
    BodyExpr left = unary(depth);
    while (true) {
      skip_blanks();
      const std::size_t column = i_ + 1;
      if (!accept('*') && !accept('/')) return left;
      const char op = text_[i_ - 1];  // before the operand moves i_ on
      BodyExpr right = unary(depth);
      left = binary(op, std::move(left), std::move(right), column);
    }
  }

  static BodyExpr binary(char op, BodyExpr a, BodyExpr b, std::size_t column) {
    BodyExpr e{.kind = BodyExpr::Kind::kBinary, .op = op, .column = column};
    e.args.push_back(std::move(a));
    e.args.push_back(std::move(b));
    return e;
  }

  BodyExpr unary(int depth) {
    if (depth > kMaxDepth) fail("the expression nests too deeply");
    skip_blanks();
    const std::size_t column = i_ + 1;
    if (accept('-')) {
      BodyExpr e{.kind = BodyExpr::Kind::kNegate, .column = column};
      e.args.push_back(unary(depth + 1));
      return e;
    }
    return primary(depth);
  }

  BodyExpr primary(int depth) {
    skip_blanks();
    const std::size_t column = i_ + 1;
    if (accept('(')) {
      BodyExpr e = expr(depth + 1);
      expect(')', "to close the parenthesis");
      return e;
    }
    if (i_ < text_.size() &&
        (std::isdigit(static_cast<unsigned char>(text_[i_])) || text_[i_] == '.'))
      return number(column);
    if (i_ < text_.size() &&
        (std::isalpha(static_cast<unsigned char>(text_[i_])) || text_[i_] == '_'))
      return name_or_call(depth, column);
    if (i_ >= text_.size()) fail("expected a value, found the end of the body");
    fail(fmt::format("expected a value (a number, a name, a call or '('), found '{}'", text_[i_]));
  }

  BodyExpr number(std::size_t column) {
    const std::string rest(text_.substr(i_));
    char* end = nullptr;
    const double value = std::strtod(rest.c_str(), &end);
    if (end == rest.c_str()) fail("malformed number");
    i_ += static_cast<std::size_t>(end - rest.c_str());
    return BodyExpr{.kind = BodyExpr::Kind::kNumber, .number = value, .column = column};
  }

  BodyExpr name_or_call(int depth, std::size_t column) {
    const std::size_t begin = i_;
    while (i_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[i_])) || text_[i_] == '_'))
      ++i_;
    std::string name(text_.substr(begin, i_ - begin));
    if (!accept('('))
      return BodyExpr{.kind = BodyExpr::Kind::kName, .name = name, .column = column};
    const auto* f = std::find_if(std::begin(kFunctions), std::end(kFunctions),
                                 [&](const BodyFunction& g) { return g.name == name; });
    if (f == std::end(kFunctions)) {
      i_ = begin;
      std::vector<std::string> known;
      for (const BodyFunction& g : kFunctions) known.emplace_back(g.name);
      fail(fmt::format("unknown function '{}' (functions: {})", name, fmt::join(known, " ")));
    }
    BodyExpr call{.kind = BodyExpr::Kind::kCall, .name = name, .column = column};
    if (!accept(')')) {
      do {
        call.args.push_back(expr(depth + 1));
      } while (accept(','));
      expect(')', fmt::format("to close the arguments of {}", name));
    }
    if (call.args.size() != f->arity) {
      i_ = begin;
      fail(fmt::format("{} takes {} argument{}, got {}", name, f->arity, f->arity == 1 ? "" : "s",
                       call.args.size()));
    }
    return call;
  }

  std::string_view text_;
  std::size_t i_ = 0;
};

void collect_names(const BodyExpr& e, std::vector<std::string>& out) {
  if (e.kind == BodyExpr::Kind::kName && std::find(out.begin(), out.end(), e.name) == out.end())
    out.push_back(e.name);
  for (const BodyExpr& a : e.args) collect_names(a, out);
}

}  // namespace

std::span<const BodyFunction> body_functions() {
  return kFunctions;
}

BodyExpr parse_body(std::string_view text) {
  return BodyParser(text).run();
}

std::vector<std::string> body_names(const BodyExpr& body) {
  std::vector<std::string> out;
  collect_names(body, out);
  return out;
}

std::string BodyExpr::to_string() const {
  auto nested = [](const BodyExpr& e) {
    return e.kind == Kind::kBinary ? "(" + e.to_string() + ")" : e.to_string();
  };
  switch (kind) {
    case Kind::kNumber:
      return fmt::format("{}", number);
    case Kind::kName:
      return name;
    case Kind::kNegate:
      return "-" + nested(args[0]);
    case Kind::kBinary:
      return fmt::format("{} {} {}", nested(args[0]), op, nested(args[1]));
    case Kind::kCall: {
      std::vector<std::string> parts;
      for (const BodyExpr& a : args) parts.push_back(a.to_string());
      return fmt::format("{}({})", name, fmt::join(parts, ", "));
    }
  }
  return "";
}

}  // namespace tapestry::metakernel
