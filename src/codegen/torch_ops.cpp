// Kernel calls as torch expressions (torch_ops.h).
#include "torch_ops.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "tapestry/support/error.h"

namespace tapestry::codegen::detail {

namespace {

using Range = zspace::Range;

const TorchArg& arg(const TorchCall& call, std::string_view name, std::size_t position = 0) {
  const auto found = call.inputs.find(name);
  if (found == call.inputs.end() || found->second.size() <= position) {
    throw Error(fmt::format("kernel '{}' has no input '{}'", call.kernel, name));
  }
  return found->second[position];
}

std::string in(const TorchCall& call, std::string_view name) {
  return arg(call, name).expr;
}

const nlohmann::json* param(const TorchCall& call, std::string_view name) {
  if (call.params == nullptr || !call.params->is_object()) return nullptr;
  const auto found = call.params->find(std::string(name));
  return found == call.params->end() ? nullptr : &*found;
}

std::int64_t int_param(const TorchCall& call, std::string_view name, std::int64_t fallback) {
  const nlohmann::json* p = param(call, name);
  return p != nullptr && p->is_number_integer() ? p->get<std::int64_t>() : fallback;
}

// A float param as Python text that reads back to the same double ("0.5", "1e-08").
std::string float_param(const TorchCall& call, std::string_view name, double fallback) {
  const nlohmann::json* p = param(call, name);
  const double value = p != nullptr && p->is_number() ? p->get<double>() : fallback;
  std::string text = fmt::format("{}", value);
  if (text == "inf") return "float('inf')";
  if (text == "-inf") return "float('-inf')";
  if (text == "nan") return "float('nan')";
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string shape_text(const Range& box) {
  if (box.rank() == 1) return fmt::format("({},)", box.extent(0));
  std::vector<std::int64_t> shape;
  for (std::size_t d = 0; d < box.rank(); ++d) shape.push_back(box.extent(d));
  return fmt::format("({})", fmt::join(shape, ", "));
}

// An axis param (may be negative) as a non-negative dim of a rank-`rank` tensor.
std::int64_t axis(const TorchCall& call, std::string_view name, std::int64_t fallback,
                  std::size_t rank) {
  std::int64_t dim = int_param(call, name, fallback);
  if (dim < 0) dim += static_cast<std::int64_t>(rank);
  return dim;
}

bool is_integer(ir::DType dtype) {
  return !ir::is_float(dtype);
}

using Mapping = std::function<std::vector<std::string>(const TorchCall&)>;

Mapping unary(std::string pattern) {
  return [pattern](const TorchCall& c) {
    return std::vector<std::string>{fmt::format(fmt::runtime(pattern), in(c, "x"))};
  };
}

Mapping binary(std::string pattern) {
  return [pattern](const TorchCall& c) {
    return std::vector<std::string>{fmt::format(fmt::runtime(pattern), in(c, "a"), in(c, "b"))};
  };
}

// A 0/1 mask in a's dtype.
Mapping mask(std::string pattern) {
  return [pattern](const TorchCall& c) {
    return std::vector<std::string>{
        fmt::format("({}).to({})", fmt::format(fmt::runtime(pattern), in(c, "a"), in(c, "b")),
                    torch_dtype(arg(c, "a").dtype))};
  };
}

std::vector<std::string> one(std::string text) {
  return {std::move(text)};
}

const std::unordered_map<std::string, Mapping>& mappings() {
  static const std::unordered_map<std::string, Mapping> table = [] {
    std::unordered_map<std::string, Mapping> m;
    // Contractions.
    m["linear"] = [](const TorchCall& c) {
      return one(fmt::format("F.linear({}, {}, {})", in(c, "x"), in(c, "w"), in(c, "bias")));
    };
    m["linear_nobias"] = [](const TorchCall& c) {
      return one(fmt::format("F.linear({}, {})", in(c, "x"), in(c, "w")));
    };
    m["matmul"] = binary("torch.matmul({}, {})");
    m["linear_grad_w"] = [](const TorchCall& c) {
      // result[o, i] = Σ_b d_result[b..., o] · x[b..., i]
      return one(
          fmt::format("{}.flatten(0, -2).t() @ {}.flatten(0, -2)", in(c, "d_result"), in(c, "x")));
    };
    m["conv2d"] = [](const TorchCall& c) {
      // padding is sugar (an explicit pad operation), so the boxes hold every window.
      return one(fmt::format("F.conv2d({}, {}, stride={})", in(c, "x"), in(c, "w"),
                             int_param(c, "stride", 1)));
    };
    // Elementwise.
    m["bias_add"] = [](const TorchCall& c) {
      return one(fmt::format("{} + {}", in(c, "x"), in(c, "bias")));
    };
    m["relu"] = unary("torch.relu({})");
    m["neg"] = unary("torch.neg({})");
    m["exp"] = unary("torch.exp({})");
    m["tanh"] = unary("torch.tanh({})");
    m["sigmoid"] = unary("torch.sigmoid({})");
    m["gelu"] = unary("F.gelu({})");
    m["sqrt"] = unary("torch.sqrt({})");
    m["log"] = unary("torch.log({})");
    m["floor"] = unary("torch.floor({})");
    m["ceil"] = unary("torch.ceil({})");
    m["round"] = unary("torch.round({})");
    m["add"] = binary("{} + {}");
    m["sub"] = binary("{} - {}");
    m["mul"] = binary("{} * {}");
    m["div"] = [](const TorchCall& c) {
      return one(
          is_integer(arg(c, "a").dtype)
              ? fmt::format("torch.div({}, {}, rounding_mode='trunc')", in(c, "a"), in(c, "b"))
              : fmt::format("{} / {}", in(c, "a"), in(c, "b")));
    };
    m["maximum"] = binary("torch.maximum({}, {})");
    m["pow"] = binary("torch.pow({}, {})");
    m["equal"] = mask("{} == {}");
    m["less"] = mask("{} < {}");
    m["less_equal"] = mask("{} <= {}");
    m["greater"] = mask("{} > {}");
    m["greater_equal"] = mask("{} >= {}");
    m["where"] = [](const TorchCall& c) {
      return one(
          fmt::format("torch.where({} != 0, {}, {})", in(c, "cond"), in(c, "a"), in(c, "b")));
    };
    m["mul_scalar"] = [](const TorchCall& c) {
      return one(fmt::format("{} * {} / {}", in(c, "x"), float_param(c, "factor", 1.0),
                             int_param(c, "divisor", 1)));
    };
    m["cast"] = [](const TorchCall& c) {
      return one(fmt::format("{}.to({})", in(c, "x"), torch_dtype(c.output_dtypes.at(0))));
    };
    m["relu_grad"] = [](const TorchCall& c) {
      return one(fmt::format("torch.where({} > 0, {}, 0.0)", in(c, "x"), in(c, "d_result")));
    };
    m["tanh_grad"] = [](const TorchCall& c) {
      return one(fmt::format("{} * (1 - {y} * {y})", in(c, "d_result"), fmt::arg("y", in(c, "y"))));
    };
    m["sigmoid_grad"] = [](const TorchCall& c) {
      return one(fmt::format("{} * {y} * (1 - {y})", in(c, "d_result"), fmt::arg("y", in(c, "y"))));
    };
    m["ones_like"] = [](const TorchCall& c) {
      return one(fmt::format("torch.full({}, {}, dtype={}, device=ctx.device)",
                             shape_text(c.output_boxes.at(0)), float_param(c, "value", 1.0),
                             torch_dtype(c.output_dtypes.at(0))));
    };
    m["zeros_like"] = [](const TorchCall& c) {
      return one(fmt::format("torch.zeros({}, dtype={}, device=ctx.device)",
                             shape_text(c.output_boxes.at(0)), torch_dtype(c.output_dtypes.at(0))));
    };
    // Normalisation and reductions.
    m["softmax"] = unary("torch.softmax({}, dim=-1)");
    m["reduce"] = [](const TorchCall& c) {
      const nlohmann::json* op = param(c, "op");
      const std::string name = op != nullptr && op->is_string() ? op->get<std::string>() : "sum";
      const std::string x = in(c, "x");
      if (name == "sum") return one(fmt::format("{}.sum(0)", x));
      if (name == "max") return one(fmt::format("{}.amax(0)", x));
      if (name == "min") return one(fmt::format("{}.amin(0)", x));
      if (name == "prod") return one(fmt::format("{}.prod(0)", x));
      throw Error(fmt::format("kernel 'reduce': no torch mapping for op '{}'", name));
    };
    m["sum"] = [](const TorchCall& c) {
      return one(fmt::format("{}.sum({})", in(c, "x"), axis(c, "dim", -1, arg(c, "x").box.rank())));
    };
    m["max"] = [](const TorchCall& c) {
      return one(
          fmt::format("{}.amax({})", in(c, "x"), axis(c, "dim", -1, arg(c, "x").box.rank())));
    };
    m["mean"] = [](const TorchCall& c) {
      return one(fmt::format("{}.mean({}, keepdim=True)", in(c, "x"),
                             axis(c, "dim", -1, arg(c, "x").box.rank())));
    };
    m["variance"] = [](const TorchCall& c) {
      return one(fmt::format("{}.var({}, unbiased=False, keepdim=True)", in(c, "x"),
                             axis(c, "dim", -1, arg(c, "x").box.rank())));
    };
    m["sum_to"] = [](const TorchCall& c) {
      // Right-aligned: x's leading dims beyond the result's rank, and every dim `shape` has as 1
      // where x (whole) has more, are summed (a shard's box of extent 1 is not one of them).
      const TorchArg& x = arg(c, "x");
      const Range& out = c.output_boxes.at(0);
      const std::size_t lead = x.box.rank() - out.rank();
      std::string e = x.expr;
      const nlohmann::json* shape = param(c, "shape");
      if (shape == nullptr || !shape->is_array() || shape->size() != out.rank()) {
        throw Error("kernel 'sum_to': its shape param does not match its result");
      }
      std::vector<std::size_t> kept;
      for (std::size_t d = 0; d < out.rank(); ++d) {
        if ((*shape)[d] == 1 && x.whole.extent(lead + d) != 1) kept.push_back(d);
      }
      if (!kept.empty()) {
        std::vector<std::size_t> dims;
        for (std::size_t d : kept) dims.push_back(lead + d);
        e = fmt::format("{}.sum(({},), keepdim=True)", e, fmt::join(dims, ", "));
      }
      if (lead > 0) {
        std::vector<std::size_t> dims;
        for (std::size_t d = 0; d < lead; ++d) dims.push_back(d);
        e = fmt::format("{}.sum(({},))", e, fmt::join(dims, ", "));
      }
      return one(e);
    };
    m["broadcast"] = [](const TorchCall& c) {
      return one(fmt::format("{}.unsqueeze({}).expand({})", in(c, "x"), int_param(c, "dim", 0),
                             shape_text(c.output_boxes.at(0))));
    };
    m["expand"] = [](const TorchCall& c) {
      return one(fmt::format("{}.expand({})", in(c, "x"), shape_text(c.output_boxes.at(0))));
    };
    // Layout.
    m["transpose"] = unary("{}.transpose(-2, -1)");
    m["permute"] = [](const TorchCall& c) {
      const nlohmann::json* perm = param(c, "perm");
      if (perm == nullptr || !perm->is_array()) throw Error("kernel 'permute': no perm param");
      return one(fmt::format("{}.permute({})", in(c, "x"),
                             fmt::join(perm->get<std::vector<std::int64_t>>(), ", ")));
    };
    m["reshape"] = [](const TorchCall& c) {
      return one(fmt::format("{}.reshape({})", in(c, "x"), shape_text(c.output_boxes.at(0))));
    };
    m["pad"] = [](const TorchCall& c) {
      // x's box is its whole [H, W] plane; the padded plane starts `padding` before it, and the
      // application's box is a window of it.
      const TorchArg& x = arg(c, "x");
      const std::int64_t p = int_param(c, "padding", 0);
      const Range& out = c.output_boxes.at(0);
      std::vector<std::string> window(out.rank() - 2, ":");
      for (std::size_t d = out.rank() - 2; d < out.rank(); ++d) {
        const std::int64_t origin = x.box.start()[d] - p;
        window.push_back(fmt::format("{}:{}", out.start()[d] - origin, out.end()[d] - origin));
      }
      return one(fmt::format("F.pad({}, ({p}, {p}, {p}, {p}), value={})[{}]", x.expr,
                             float_param(c, "value", 0.0), fmt::join(window, ", "),
                             fmt::arg("p", p)));
    };
    // Pooling (square windows).
    m["max_pool2d"] = [](const TorchCall& c) {
      return one(fmt::format("F.max_pool2d({}, {}, stride={})", in(c, "x"),
                             int_param(c, "kernel", 1), int_param(c, "stride", 1)));
    };
    m["avg_pool2d"] = [](const TorchCall& c) {
      return one(fmt::format("F.avg_pool2d({}, {}, stride={})", in(c, "x"),
                             int_param(c, "kernel", 1), int_param(c, "stride", 1)));
    };
    // Losses and optimizers (training.yaml).
    m["cross_entropy"] = [](const TorchCall& c) {
      return one(fmt::format("F.cross_entropy({}, {}.long(), reduction='sum') / {}",
                             in(c, "logits"), in(c, "labels"),
                             int_param(c, "count", arg(c, "logits").whole.extent(0))));
    };
    m["cross_entropy_grad"] = [](const TorchCall& c) {
      const TorchArg& logits = arg(c, "logits");
      return one(
          fmt::format("(torch.softmax({l}, dim=-1) - F.one_hot({}.long(), {}).to({})) * {} / {}",
                      in(c, "labels"), logits.box.extent(logits.box.rank() - 1),
                      torch_dtype(logits.dtype), in(c, "d_result"),
                      int_param(c, "count", logits.whole.extent(0)), fmt::arg("l", logits.expr)));
    };
    m["mse"] = [](const TorchCall& c) {
      return one(fmt::format("(({} - {}) ** 2).sum() / {}", in(c, "pred"), in(c, "target"),
                             int_param(c, "count", arg(c, "pred").whole.size())));
    };
    m["sgd"] = [](const TorchCall& c) {
      return one(fmt::format("{p} - {} * ({} + {} * {p})", float_param(c, "lr", 0.0), in(c, "grad"),
                             float_param(c, "weight_decay", 0.0), fmt::arg("p", in(c, "param"))));
    };
    m["sgd_momentum"] = [](const TorchCall& c) {
      const std::string g = fmt::format("({} + {} * {})", in(c, "grad"),
                                        float_param(c, "weight_decay", 0.0), in(c, "param"));
      const std::string v =
          fmt::format("({} * {} + {})", float_param(c, "momentum", 0.0), in(c, "velocity"), g);
      std::vector<std::string> out;
      for (const std::string& name : c.output_names) {
        if (name == "velocity_next") {
          out.push_back(v);
        } else {
          out.push_back(fmt::format("{} - {} * {}", in(c, "param"), float_param(c, "lr", 0.0), v));
        }
      }
      return out;
    };
    return m;
  }();
  return table;
}

}  // namespace

std::string torch_dtype(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kFloat32:
      return "torch.float32";
    case ir::DType::kFloat64:
      return "torch.float64";
    case ir::DType::kInt32:
      return "torch.int32";
    case ir::DType::kInt64:
      return "torch.int64";
    case ir::DType::kFloat16:
      return "torch.float16";
    case ir::DType::kBool:
      return "torch.bool";
    case ir::DType::kInt8:
      return "torch.int8";
    case ir::DType::kInt16:
      return "torch.int16";
    default:
      throw Error(fmt::format("dtype {} has no torch dtype that .npy files can hold",
                              ir::dtype_name(dtype)));
  }
}

std::vector<std::string> torch_expressions(const TorchCall& call) {
  const auto found = mappings().find(std::string(call.kernel));
  if (found == mappings().end()) {
    throw Error(
        fmt::format("no torch mapping for kernel '{}' (docs/codegen.md lists the kernels "
                    "that have one)",
                    call.kernel));
  }
  std::vector<std::string> out = found->second(call);
  if (out.size() != call.output_names.size()) {
    throw Error(fmt::format("kernel '{}': torch computes {} outputs, the operation has {}",
                            call.kernel, out.size(), call.output_names.size()));
  }
  return out;
}

std::vector<std::string> mapped_kernels() {
  std::vector<std::string> names;
  for (const auto& [name, mapping] : mappings()) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace tapestry::codegen::detail
