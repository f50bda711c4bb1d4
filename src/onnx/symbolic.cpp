// Dynamic axes as dim variables (symbolic.h): probe imports, a token diff, a multilinear fit.
#include "tapestry/onnx/symbolic.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "tapestry/metakernel/printer.h"
#include "tapestry/metakernel/tap_lexer.h"
#include "tapestry/support/error.h"

namespace tapestry::onnx {

namespace {

namespace tap = metakernel::tap;

constexpr std::int64_t kLow = 5;  // the corners of the fit: every dim at kLow or kHigh
constexpr std::int64_t kHigh = 7;
constexpr std::int64_t kCheck = 11;  // every dim at once: the fit must predict it

__extension__ using Wide = __int128;

// One probe: the dims' values, the import and its printed program's tokens.
struct Probe {
  std::vector<std::int64_t> values;
  ImportResult result;
  std::string text;
  std::vector<tap::Token> tokens;
};

Probe import_at(const std::string& path, const ImportOptions& options,
                const std::vector<DynamicDim>& dims, std::vector<std::int64_t> values) {
  ImportOptions at = options;
  for (std::size_t i = 0; i < dims.size(); ++i) at.dims[dims[i].name] = values[i];
  Probe probe{std::move(values), import_onnx_file(path, at), {}, {}};
  probe.text = metakernel::print_tap(probe.result.graph, metakernel::builtin_signatures());
  probe.tokens = tap::lex(probe.text);
  return probe;
}

std::string sizes(const std::vector<DynamicDim>& dims, const std::vector<std::int64_t>& values) {
  std::string out;
  for (std::size_t i = 0; i < dims.size(); ++i)
    out += fmt::format("{}{}={}", i == 0 ? "" : ", ", dims[i].name, values[i]);
  return out;
}

// The integer at token i, with a '-' just before it as its sign; `first` is where it starts.
std::int64_t signed_value(const std::vector<tap::Token>& tokens, std::size_t i,
                          std::size_t* first) {
  const std::int64_t v = std::stoll(tokens[i].text);
  const bool negative = i > 0 && tokens[i - 1].kind == tap::TokenKind::kMinus;
  if (first != nullptr) *first = negative ? i - 1 : i;
  return negative ? -v : v;
}

// The programs of two probes differ other than in an integer: an Error at the first difference.
void check_same_program(const std::string& path, const std::vector<DynamicDim>& dims,
                        const Probe& a, const Probe& b) {
  const std::size_t n = std::min(a.tokens.size(), b.tokens.size());
  for (std::size_t i = 0; i <= n; ++i) {
    const bool end = i == n;
    if (!end && a.tokens[i].kind == b.tokens[i].kind &&
        (a.tokens[i].kind == tap::TokenKind::kInt || a.tokens[i].text == b.tokens[i].text)) {
      continue;
    }
    if (end && a.tokens.size() == b.tokens.size()) return;
    const tap::Token& at = a.tokens[std::min(i, a.tokens.size() - 1)];
    const tap::Token& bt = b.tokens[std::min(i, b.tokens.size() - 1)];
    throw Error(fmt::format(
        "{}: the imported graph's structure depends on the dynamic dims (at {}: line {} reads "
        "'{}', at {}: line {} reads '{}'), so it cannot be one program with dim variables; "
        "give every input's shape with --shape",
        path, sizes(dims, a.values), at.pos.line, tap::describe(at), sizes(dims, b.values),
        bt.pos.line, tap::describe(bt)));
  }
}

// Weights are written once: they must not depend on the dims.
void check_same_weights(const std::string& path, const std::vector<DynamicDim>& dims,
                        const Probe& a, const Probe& b) {
  const auto mismatch = [&](const std::string& name, const std::string& what) {
    return Error(
        fmt::format("{}: weight '{}' {} with the dynamic dims ({} vs {}); it cannot be "
                    "written once: give every input's shape with --shape",
                    path, name, what, sizes(dims, a.values), sizes(dims, b.values)));
  };
  if (a.result.weights.size() != b.result.weights.size())
    throw mismatch(a.result.weights.empty() ? "?" : a.result.weights.front().name, "set changes");
  for (std::size_t i = 0; i < a.result.weights.size(); ++i) {
    const runtime::Buffer& x = a.result.weights[i].value;
    const runtime::Buffer& y = b.result.weights[i].value;
    if (a.result.weights[i].name != b.result.weights[i].name)
      throw mismatch(a.result.weights[i].name, "is not imported at both sizes");
    if (x.dtype() != y.dtype() || x.range() != y.range())
      throw mismatch(a.result.weights[i].name, "changes shape");
    if (x.size_bytes() != y.size_bytes() ||
        (x.size_bytes() > 0 && std::memcmp(x.bytes(), y.bytes(), x.size_bytes()) != 0))
      throw mismatch(a.result.weights[i].name, "changes value");
  }
}

// The monomial coefficients (bit j of a subset: dim j is a factor) of the polynomial, linear in
// each dim, that takes corners[c] at the corner c (bit j: dim j at kHigh, else kLow); nullopt
// when a coefficient is not an integer.
std::optional<std::vector<std::int64_t>> fit(std::vector<Wide> values, std::size_t k) {
  // Scale by 2^k so each axis step's division by (kHigh - kLow) = 2 is exact.
  for (Wide& v : values) v <<= k;
  for (std::size_t axis = 0; axis < k; ++axis) {
    const std::size_t bit = std::size_t{1} << axis;
    for (std::size_t c = 0; c < values.size(); ++c) {
      if ((c & bit) != 0) continue;
      const Wide lo = values[c], hi = values[c | bit];
      const Wide slope = (hi - lo) / (kHigh - kLow);
      values[c] = lo - kLow * slope;  // the constant along this axis
      values[c | bit] = slope;        // the coefficient of this dim
    }
  }
  std::vector<std::int64_t> out;
  const Wide scale = Wide{1} << k;
  for (Wide v : values) {
    if (v % scale != 0) return std::nullopt;
    const Wide c = v / scale;
    if (c > INT64_MAX || c < INT64_MIN) return std::nullopt;
    out.push_back(static_cast<std::int64_t>(c));
  }
  return out;
}

Wide evaluate(const std::vector<std::int64_t>& coefficients, const std::vector<std::int64_t>& at) {
  Wide sum = 0;
  for (std::size_t subset = 0; subset < coefficients.size(); ++subset) {
    Wide term = coefficients[subset];
    for (std::size_t j = 0; j < at.size(); ++j)
      if ((subset & (std::size_t{1} << j)) != 0) term *= at[j];
    sum += term;
  }
  return sum;
}

// `batch*197 + 1`, `-batch`, `batch*seq*64 - 2`.
std::string expression(const std::vector<std::int64_t>& coefficients,
                       const std::vector<DynamicDim>& dims) {
  std::string out;
  const auto add_term = [&](std::int64_t c, std::string factors) {
    if (c == 0) return;
    const std::uint64_t magnitude =
        c < 0 ? static_cast<std::uint64_t>(-(c + 1)) + 1 : static_cast<std::uint64_t>(c);
    std::string term = factors.empty()  ? fmt::format("{}", magnitude)
                       : magnitude == 1 ? factors
                                        : fmt::format("{}*{}", factors, magnitude);
    if (out.empty()) {
      out = (c < 0 ? "-" : "") + term;
    } else {
      out += (c < 0 ? " - " : " + ") + term;
    }
  };
  for (std::size_t subset = 1; subset < coefficients.size(); ++subset) {
    std::string factors;
    for (std::size_t j = 0; j < dims.size(); ++j) {
      if ((subset & (std::size_t{1} << j)) != 0)
        factors += (factors.empty() ? "" : "*") + dims[j].name;
    }
    add_term(coefficients[subset], factors);
  }
  add_term(coefficients[0], "");
  return out.empty() ? "0" : out;
}

std::string read_model(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open the file", path));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace

std::vector<DynamicDim> find_dynamic_dims(const std::string& path, const ImportOptions& options) {
  const std::string bytes = read_model(path);
  ::onnx::ModelProto model;
  if (bytes.empty() || bytes.size() > static_cast<std::size_t>(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) || !model.has_graph()) {
    return {};  // the import says what is wrong with the file
  }
  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  std::vector<DynamicDim> out;
  for (const auto& input : model.graph().input()) {
    if (initializers.contains(input.name()) || options.shapes.contains(input.name())) continue;
    if (!input.type().tensor_type().has_shape()) continue;  // the import asks for --shape
    const auto& shape = input.type().tensor_type().shape();
    for (int k = 0; k < shape.dim_size(); ++k) {
      const auto& d = shape.dim(k);
      if (d.has_dim_value() && d.dim_value() >= 0) continue;
      const std::string name = dynamic_dim_name(input.name(), k, d.dim_param());
      if (std::ranges::any_of(out, [&](const DynamicDim& x) { return x.name == name; })) continue;
      const auto given = options.dims.find(name);
      out.push_back(
          DynamicDim{name, input.name(), k, given != options.dims.end() ? given->second : 1});
    }
  }
  return out;
}

SymbolicImport import_onnx_symbolic(const std::string& path, const ImportOptions& options) {
  const std::vector<DynamicDim> dims = find_dynamic_dims(path, options);
  if (dims.empty() || options.check) {
    ImportOptions own = options;  // --check: at the dims' values
    for (const DynamicDim& d : dims) own.dims[d.name] = d.value;
    ImportResult r = import_onnx_file(path, own);
    std::string text =
        options.check ? "" : metakernel::print_tap(r.graph, metakernel::builtin_signatures());
    return SymbolicImport{std::move(r), std::move(text), dims};
  }
  if (dims.size() > kMaxDynamicDims) {
    throw Error(
        fmt::format("{}: {} dynamic dims ({}…); at most {} become dim variables: give "
                    "the inputs' shapes with --shape",
                    path, dims.size(), dims.front().name, kMaxDynamicDims));
  }
  const std::size_t k = dims.size();
  std::vector<Probe> corners;
  for (std::size_t c = 0; c < (std::size_t{1} << k); ++c) {
    std::vector<std::int64_t> values;
    for (std::size_t j = 0; j < k; ++j) values.push_back((c >> j & 1) != 0 ? kHigh : kLow);
    corners.push_back(import_at(path, options, dims, std::move(values)));
    check_same_program(path, dims, corners.front(), corners.back());
    check_same_weights(path, dims, corners.front(), corners.back());
  }
  const Probe check = import_at(path, options, dims, std::vector<std::int64_t>(k, kCheck));
  check_same_program(path, dims, corners.front(), check);

  // Every integer token: fitted where the corners differ, checked at the check probe.
  const std::vector<tap::Token>& tokens = corners.front().tokens;
  struct Replacement {
    std::size_t first, last;  // token span (a sign and its integer)
    std::string text;
  };
  std::vector<Replacement> replacements;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].kind != tap::TokenKind::kInt) continue;
    std::size_t first = i;
    std::vector<Wide> values;
    for (const Probe& p : corners) values.push_back(signed_value(p.tokens, i, &first));
    const bool constant = std::ranges::all_of(values, [&](Wide v) { return v == values.front(); });
    const std::optional<std::vector<std::int64_t>> coefficients = fit(values, k);
    const Wide predicted =
        coefficients ? evaluate(*coefficients, check.values) : values.front() - 1;
    if (!coefficients || predicted != signed_value(check.tokens, i, nullptr)) {
      throw Error(fmt::format(
          "{}: the size on line {} of the imported program ({} at {}) is not a polynomial in "
          "the dynamic dims linear in each (it is {} at {}), so it cannot be written with dim "
          "variables; give every input's shape with --shape",
          path, tokens[i].pos.line, static_cast<std::int64_t>(values.front()),
          sizes(dims, corners.front().values), signed_value(check.tokens, i, nullptr),
          sizes(dims, check.values)));
    }
    if (!constant) replacements.push_back({first, i, expression(*coefficients, dims)});
  }

  // The text: a header of `dim` statements, then the program with the expressions in place.
  const std::string& text = corners.front().text;
  std::vector<std::size_t> line_start{0};
  for (std::size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') line_start.push_back(i + 1);
  const auto offset = [&](const tap::Token& t) {
    return line_start[static_cast<std::size_t>(t.pos.line - 1)] +
           static_cast<std::size_t>(t.pos.column - 1);
  };
  std::string out = fmt::format("# dynamic dims of {}: run at any size with --dim NAME=N\n",
                                std::filesystem::path(path).filename().string());
  for (const DynamicDim& d : dims)
    out += fmt::format("dim {} = {}  # {} dim {}\n", d.name, d.value, d.input, d.axis);
  std::size_t at = 0;
  for (const Replacement& r : replacements) {
    const std::size_t begin = offset(tokens[r.first]);
    out.append(text, at, begin - at);
    out += r.text;
    at = offset(tokens[r.last]) + tokens[r.last].text.size();
  }
  out.append(text, at, std::string::npos);

  // The model at the dims' own values: what the command reports, and the weights it writes.
  std::vector<std::int64_t> own;
  for (const DynamicDim& d : dims) own.push_back(d.value);
  Probe at_own = import_at(path, options, dims, std::move(own));
  check_same_weights(path, dims, corners.front(), at_own);
  return SymbolicImport{std::move(at_own.result), std::move(out), dims};
}

}  // namespace tapestry::onnx
