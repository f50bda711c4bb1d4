// Kernel calls as torch expressions (torch_ops.h).
#include "torch_ops.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
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

// pad2d / pad3d: x (its whole trailing planes) padded by the params `before`/`after` per trailing
// dim with `value`, then the application's window of the padded tensor.
std::vector<std::string> padded(const TorchCall& c, const std::vector<std::string>& before,
                                const std::vector<std::string>& after) {
  const TorchArg& x = arg(c, "x");
  const Range& out = c.output_boxes.at(0);
  const std::size_t rank = out.rank();
  const std::size_t trailing = before.size();
  std::vector<std::int64_t> pads;  // F.pad's order: last dim first
  for (std::size_t k = trailing; k-- > 0;) {
    pads.push_back(int_param(c, before[k], 0));
    pads.push_back(int_param(c, after[k], 0));
  }
  std::vector<std::string> window(rank - trailing, ":");
  for (std::size_t k = 0; k < trailing; ++k) {
    const std::size_t d = rank - trailing + k;
    const std::int64_t origin = x.box.start()[d] - int_param(c, before[k], 0);
    window.push_back(fmt::format("{}:{}", out.start()[d] - origin, out.end()[d] - origin));
  }
  return one(fmt::format("F.pad({}, ({}), value={})[{}]", x.expr, fmt::join(pads, ", "),
                         float_param(c, "value", 0.0), fmt::join(window, ", ")));
}

// argmax / argmin over x's whole `axis`; select_last_index searches the flipped axis.
Mapping arg_extreme(std::string op) {
  return [op](const TorchCall& c) {
    const TorchArg& x = arg(c, "x");
    const std::int64_t dim = axis(c, "axis", -1, x.box.rank());
    const nlohmann::json* keep = param(c, "keepdims");
    const nlohmann::json* last = param(c, "select_last_index");
    const bool keepdims = keep != nullptr && keep->is_boolean() && keep->get<bool>();
    const std::string kd = keepdims ? "True" : "False";
    if (last != nullptr && last->is_boolean() && last->get<bool>()) {
      return one(fmt::format("{} - {}.flip({dim}).{}({dim}, keepdim={})", x.box.extent(dim) - 1,
                             x.expr, op, kd, fmt::arg("dim", dim)));
    }
    return one(fmt::format("{}.{}({}, keepdim={})", x.expr, op, dim, kd));
  };
}

// max_pool2d_rect / avg_pool2d_rect (the average in float64, rounded once).
Mapping rect_pool(std::string pool, bool average) {
  return [pool, average](const TorchCall& c) {
    const TorchArg& x = arg(c, "x");
    const std::string call =
        fmt::format("{}({}{}, ({}, {}), stride=({}, {}))", pool, x.expr, average ? ".double()" : "",
                    int_param(c, "kernel_h", 1), int_param(c, "kernel_w", 1),
                    int_param(c, "stride_h", 1), int_param(c, "stride_w", 1));
    return one(average ? fmt::format("{}.to({})", call, torch_dtype(x.dtype)) : call);
  };
}

Mapping pool3d(std::string pool, bool average) {
  return [pool, average](const TorchCall& c) {
    const TorchArg& x = arg(c, "x");
    const std::string call = fmt::format(
        "{}({}{}, ({}, {}, {}), stride=({}, {}, {}))", pool, x.expr, average ? ".double()" : "",
        int_param(c, "kernel_d", 1), int_param(c, "kernel_h", 1), int_param(c, "kernel_w", 1),
        int_param(c, "stride_d", 1), int_param(c, "stride_h", 1), int_param(c, "stride_w", 1));
    return one(average ? fmt::format("{}.to({})", call, torch_dtype(x.dtype)) : call);
  };
}

// max_pool2d_grad / avg_pool2d_grad: the windows of the shard's x box, their gradient placed in
// the result's plane (ctx.pool_grad).
Mapping pool_grad(std::string kind) {
  return [kind](const TorchCall& c) {
    const TorchArg& x = arg(c, "x");
    const Range& out = c.output_boxes.at(0);
    const std::size_t r = out.rank();
    return one(fmt::format("ctx.pool_grad('{}', {}, {}, {}, {}, {}, ({}, {}))", kind, x.expr,
                           in(c, "d_result"), int_param(c, "kernel", 1), int_param(c, "stride", 1),
                           shape_text(out), x.box.start()[r - 2] - out.start()[r - 2],
                           x.box.start()[r - 1] - out.start()[r - 1]));
  };
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
    // Masks and pointwise derivatives (masks.yaml, autodiff.yaml).
    m["logical_and"] = mask("({} != 0) & ({} != 0)");
    m["logical_or"] = mask("({} != 0) | ({} != 0)");
    m["logical_xor"] = mask("({} != 0) ^ ({} != 0)");
    m["logical_not"] = [](const TorchCall& c) {
      return one(fmt::format("({} == 0).to({})", in(c, "x"), torch_dtype(arg(c, "x").dtype)));
    };
    m["gelu_grad"] = [](const TorchCall& c) {
      // d · (Φ(x) + x·φ(x)): Φ(x) = erfc(−x/√2)/2, φ(x) = e^(−x²/2)/√(2π); in float64, rounded
      // once (the kernel's bar allows a few float32 ulps, not float32's roundings at each step).
      const TorchArg& x = arg(c, "x");
      return one(
          fmt::format("({d}.double() * (0.5 * torch.erfc({x} * -0.7071067811865476) + {x} * "
                      "torch.exp({x} * {x} * -0.5) * 0.3989422804014327)).to({t})",
                      fmt::arg("d", in(c, "d_result")), fmt::arg("x", x.expr + ".double()"),
                      fmt::arg("t", torch_dtype(x.dtype))));
    };
    m["sqrt_grad"] = [](const TorchCall& c) {
      return one(fmt::format("{} / (2 * {})", in(c, "d_result"), in(c, "y")));
    };
    m["maximum_grad_a"] = [](const TorchCall& c) {
      return one(fmt::format("torch.where({} >= {}, {d}, torch.zeros((), dtype={d}.dtype))",
                             in(c, "a"), in(c, "b"), fmt::arg("d", in(c, "d_result"))));
    };
    m["maximum_grad_b"] = [](const TorchCall& c) {
      return one(fmt::format("torch.where({} > {}, {d}, torch.zeros((), dtype={d}.dtype))",
                             in(c, "b"), in(c, "a"), fmt::arg("d", in(c, "d_result"))));
    };
    // Gradients of normalisations, reductions and losses (training.yaml).
    m["softmax_grad"] = [](const TorchCall& c) {
      // The row sum in float64, as the kernels carry it.
      const TorchArg& y = arg(c, "y");
      return one(
          fmt::format("{y} * ({d} - ({d}.double() * {y}.double()).sum(-1, keepdim=True).to({t}))",
                      fmt::arg("y", y.expr), fmt::arg("d", in(c, "d_result")),
                      fmt::arg("t", torch_dtype(y.dtype))));
    };
    m["max_grad"] = [](const TorchCall& c) {
      const std::int64_t dim = axis(c, "dim", -1, arg(c, "x").box.rank());
      return one(
          fmt::format("torch.where(ctx.first_match({x}, {}, {dim}) != 0, {d}.unsqueeze({dim}), "
                      "torch.zeros((), dtype={d}.dtype))",
                      in(c, "y"), fmt::arg("x", in(c, "x")), fmt::arg("d", in(c, "d_result")),
                      fmt::arg("dim", dim)));
    };
    m["reduce_grad"] = [](const TorchCall& c) {
      const nlohmann::json* op = param(c, "op");
      const std::string name = op != nullptr && op->is_string() ? op->get<std::string>() : "sum";
      const std::string x = in(c, "x");
      const std::string d = in(c, "d_result");
      if (name == "sum") return one(fmt::format("{}.unsqueeze(0).expand_as({}).clone()", d, x));
      if (name == "prod")
        return one(fmt::format("{}.unsqueeze(0) * ctx.exclusive_product({})", d, x));
      if (name == "max" || name == "min") {
        return one(
            fmt::format("torch.where(ctx.first_match({x}, {}, 0) != 0, {d}.unsqueeze(0), "
                        "torch.zeros((), dtype={d}.dtype))",
                        in(c, "y"), fmt::arg("x", x), fmt::arg("d", d)));
      }
      throw Error(fmt::format("kernel 'reduce_grad': no torch mapping for op '{}'", name));
    };
    m["mse_grad"] = [](const TorchCall& c) {
      return one(fmt::format("2 * ({} - {}) * {} / {}", in(c, "pred"), in(c, "target"),
                             in(c, "d_result"),
                             int_param(c, "count", arg(c, "pred").whole.size())));
    };
    m["adam"] = [](const TorchCall& c) {
      // float64 inside, each output rounded once (training.yaml); step is a rank-0 integer.
      const bool decoupled = param(c, "decoupled") != nullptr &&
                             param(c, "decoupled")->is_boolean() &&
                             param(c, "decoupled")->get<bool>();
      const std::string wd = float_param(c, "weight_decay", 0.0);
      const std::string lr = float_param(c, "lr", 0.001);
      const std::string b1 = float_param(c, "beta1", 0.9);
      const std::string b2 = float_param(c, "beta2", 0.999);
      const std::string p = fmt::format("{}.double()", in(c, "param"));
      const std::string g = decoupled
                                ? fmt::format("{}.double()", in(c, "grad"))
                                : fmt::format("({}.double() + {} * {})", in(c, "grad"), wd, p);
      const std::string m1 =
          fmt::format("({} * {}.double() + (1 - {}) * {g})", b1, in(c, "m"), b1, fmt::arg("g", g));
      const std::string v1 = fmt::format("({} * {}.double() + (1 - {}) * {g} * {g})", b2,
                                         in(c, "v"), b2, fmt::arg("g", g));
      const std::string t = fmt::format("int({}.item())", in(c, "step"));
      const std::string p1 = decoupled ? fmt::format("{} * (1 - {} * {})", p, lr, wd) : p;
      const std::string dtype = torch_dtype(arg(c, "param").dtype);
      std::vector<std::string> out;
      for (const std::string& name : c.output_names) {
        if (name == "m_next") {
          out.push_back(fmt::format("{}.to({})", m1, dtype));
        } else if (name == "v_next") {
          out.push_back(fmt::format("{}.to({})", v1, dtype));
        } else {
          out.push_back(fmt::format(
              "({} - {lr} * ({m} / (1 - {b1} ** {t})) / (torch.sqrt({v} / (1 - {b2} ** {t})) + "
              "{eps})).to({})",
              p1, dtype, fmt::arg("lr", lr), fmt::arg("m", m1), fmt::arg("b1", b1),
              fmt::arg("t", t), fmt::arg("v", v1), fmt::arg("b2", b2),
              fmt::arg("eps", float_param(c, "eps", 1e-8))));
        }
      }
      return out;
    };
    // Layout (layout.yaml, autodiff.yaml): the boxes the IPFs give are the cells to move.
    m["slice"] = unary("{}.clone()");
    m["unpad"] = unary("{}.clone()");
    m["unslice"] = [](const TorchCall& c) {
      // x (its whole dim `dim`) padded with zeros to the result's extent, then the result's box.
      const TorchArg& x = arg(c, "x");
      const std::size_t rank = x.box.rank();
      const std::size_t dim = static_cast<std::size_t>(axis(c, "dim", 0, rank));
      const std::int64_t start = int_param(c, "start", 0);
      const std::int64_t size = int_param(c, "size", 0);
      std::vector<std::int64_t> pads;
      for (std::size_t d = rank; d-- > dim + 1;) pads.insert(pads.end(), {0, 0});
      pads.insert(pads.end(), {start, size - start - x.box.extent(dim)});
      const Range& out = c.output_boxes.at(0);
      std::vector<std::string> window(rank, ":");
      window[dim] = fmt::format("{}:{}", out.start()[dim], out.end()[dim]);
      return one(fmt::format("F.pad({}, ({}))[{}]", x.expr, fmt::join(pads, ", "),
                             fmt::join(window, ", ")));
    };
    m["pad2d"] = [](const TorchCall& c) { return padded(c, {"top", "left"}, {"bottom", "right"}); };
    m["pad3d"] = [](const TorchCall& c) {
      return padded(c, {"front", "top", "left"}, {"back", "bottom", "right"});
    };
    m["gather"] = [](const TorchCall& c) {
      // numpy's take: negative indices count from the end; x holds the whole axis.
      const TorchArg& x = arg(c, "x");
      const std::int64_t dim = axis(c, "axis", 0, x.box.rank());
      return one(fmt::format(
          "torch.index_select({x}, {dim}, torch.where({i} < 0, {i} + {n}, {i}).long().flatten())"
          ".reshape({})",
          shape_text(c.output_boxes.at(0)), fmt::arg("x", x.expr), fmt::arg("dim", dim),
          fmt::arg("i", in(c, "indices")), fmt::arg("n", x.box.extent(dim))));
    };
    m["argmax"] = arg_extreme("argmax");
    m["argmin"] = arg_extreme("argmin");
    // Convolutions and pooling beyond conv2d's and the square pools.
    m["conv3d"] = [](const TorchCall& c) {
      return one(fmt::format("F.conv3d({}, {}, stride={})", in(c, "x"), in(c, "w"),
                             int_param(c, "stride", 1)));
    };
    m["dilated_conv2d"] = [](const TorchCall& c) {
      return one(fmt::format("F.conv2d({}, {}, stride={}, dilation={})", in(c, "x"), in(c, "w"),
                             int_param(c, "stride", 1), int_param(c, "dilation", 1)));
    };
    m["dilated_conv3d"] = [](const TorchCall& c) {
      return one(fmt::format("F.conv3d({}, {}, stride={}, dilation={})", in(c, "x"), in(c, "w"),
                             int_param(c, "stride", 1), int_param(c, "dilation", 1)));
    };
    m["grouped_conv2d"] = [](const TorchCall& c) {
      // The shard's filters are whole groups (their count = groups here), or part of one group
      // (one group: x's box holds that group's channels).
      const TorchArg& w = arg(c, "w");
      const std::int64_t groups = int_param(c, "groups", 1);
      const std::int64_t per_group = w.whole.extent(0) / groups;
      const std::int64_t first = w.box.start()[0] - w.whole.start()[0];
      const std::int64_t count = w.box.extent(0);
      std::int64_t g = 1;
      if (first % per_group == 0 && count % per_group == 0) {
        g = count / per_group;
      } else if (first / per_group != (first + count - 1) / per_group) {
        throw Error(
            "kernel 'grouped_conv2d': no torch mapping for a shard of filters that spans groups "
            "without whole ones");
      }
      return one(fmt::format("F.conv2d({}, {}, stride={}, groups={})", in(c, "x"), w.expr,
                             int_param(c, "stride", 1), g));
    };
    m["max_pool2d_rect"] = rect_pool("F.max_pool2d", false);
    m["avg_pool2d_rect"] = rect_pool("F.avg_pool2d", true);
    m["max_pool3d"] = pool3d("F.max_pool3d", false);
    m["avg_pool3d"] = pool3d("F.avg_pool3d", true);
    m["max_pool2d_grad"] = pool_grad("max");
    m["avg_pool2d_grad"] = pool_grad("avg");
    m["conv2d_grad_input"] = [](const TorchCall& c) {
      // The shard's taps [i0, i1) × [j0, j1) of the transposed convolution, placed at (i0, j0)
      // of the result's plane (the whole plane: a partial sum over o, i, j).
      const TorchArg& w = arg(c, "w");
      const Range& out = c.output_boxes.at(0);
      const TorchArg& d = arg(c, "d_result");
      const std::int64_t stride = int_param(c, "stride", 1);
      const std::int64_t i0 = w.box.start()[2] - w.whole.start()[2];
      const std::int64_t j0 = w.box.start()[3] - w.whole.start()[3];
      const std::int64_t rows = (d.box.extent(2) - 1) * stride + w.box.extent(2);
      const std::int64_t cols = (d.box.extent(3) - 1) * stride + w.box.extent(3);
      return one(fmt::format("F.pad(F.conv_transpose2d({}, {}, stride={}), ({}, {}, {}, {}))",
                             d.expr, w.expr, stride, j0, out.extent(3) - j0 - cols, i0,
                             out.extent(2) - i0 - rows));
    };
    m["conv2d_grad_weight"] = [](const TorchCall& c) {
      // x holds the rows and columns the shard's taps met: a weight gradient of those taps.
      const Range& out = c.output_boxes.at(0);
      return one(fmt::format("torch.nn.grad.conv2d_weight({}, {}, {}, stride={})", in(c, "x"),
                             shape_text(out), in(c, "d_result"), int_param(c, "stride", 1)));
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

namespace {

// A Python literal of `value` converted to `dtype` (truncated for integers, as the body's
// numbers are) as a 0-d tensor of it.
std::string scalar_tensor(double value, ir::DType dtype) {
  std::string text;
  if (is_integer(dtype)) {
    if (!std::isfinite(value) || std::abs(value) >= 0x1p63) {
      throw Error(
          fmt::format("a body's number or param {} has no {} value", value, ir::dtype_name(dtype)));
    }
    text = fmt::format("{}", static_cast<std::int64_t>(value));
  } else if (std::isnan(value)) {
    text = "float('nan')";
  } else if (std::isinf(value)) {
    text = value > 0 ? "float('inf')" : "float('-inf')";
  } else {
    text = fmt::format("{}", value);
    if (text.find_first_of(".e") == std::string::npos) text += ".0";
  }
  return fmt::format("torch.tensor({}, dtype={})", text, torch_dtype(dtype));
}

// A kernel file's kernel from its body, one output: every input holds one cell per index point
// (its box has the index box's shape, without a split reduction's block dim), the body is
// evaluated over the index box, then folded over the reduction dims with their monoid.
std::vector<std::string> body_expressions(const TorchCall& call) {
  const metakernel::Metakernel& k = *call.body_kernel;
  if (call.output_names.size() != 1) {
    throw Error(fmt::format("kernel '{}': a body kernel has one output, this call {}", k.name,
                            call.output_names.size()));
  }
  const auto reduced = [&](const std::string& dim) {
    return std::any_of(call.reductions.begin(), call.reductions.end(),
                       [&](const ir::Reduction& r) { return r.dim == dim; });
  };
  // The index dims the inputs span (a split reduction's block dim is the partials' alone), and
  // the positions among them of the reduced ones.
  std::vector<std::int64_t> shape, out_shape;
  std::vector<std::size_t> folded;
  for (std::size_t d = 0; d < call.index.rank(); ++d) {
    const std::string& name = d < call.index_names.size() ? call.index_names[d] : std::string();
    if (name == "block" && !reduced(name)) continue;
    if (reduced(name)) {
      folded.push_back(shape.size());
    } else {
      out_shape.push_back(call.index.extent(d));
    }
    shape.push_back(call.index.extent(d));
  }
  const auto text = [](const std::vector<std::int64_t>& v) {
    return fmt::format("{}", fmt::join(v, ", "));
  };
  const auto unmapped = [&](const std::string& why) {
    return Error(fmt::format(
        "no torch mapping for kernel '{}' (a kernel file's body): {}; a body maps to torch where "
        "every input holds one cell per index point, in the index's order (no broadcast or "
        "permutation)",
        k.name, why));
  };
  const Range& out = call.output_boxes.front();
  for (const auto& [name, args] : call.inputs) {
    for (const TorchArg& a : args) {
      const zspace::Point box_shape = a.box.shape();
      const std::vector<std::int64_t> in_shape(box_shape.begin(), box_shape.end());
      if (in_shape != shape) {
        throw unmapped(
            fmt::format("input '{}' holds a box of shape [{}] over an index of shape [{}]", name,
                        text(in_shape), text(shape)));
      }
    }
  }
  const zspace::Point out_box_shape = out.shape();
  const std::vector<std::int64_t> result(out_box_shape.begin(), out_box_shape.end());
  if (result != out_shape) {
    throw unmapped(
        fmt::format("its output's box has shape [{}], its index without the reduced dims [{}]",
                    text(result), text(out_shape)));
  }
  const ir::DType dtype = call.output_dtypes.front();
  const Range points = Range::of_shape(zspace::Point(std::span<const std::int64_t>(shape)));
  using Kind = metakernel::BodyExpr::Kind;
  std::function<std::string(const metakernel::BodyExpr&)> emit =
      [&](const metakernel::BodyExpr& e) -> std::string {
    switch (e.kind) {
      case Kind::kNumber:
        return scalar_tensor(e.number, dtype);
      case Kind::kName: {
        if (k.find_input(e.name) != nullptr) return in(call, e.name);
        const nlohmann::json* p = param(call, e.name);
        const metakernel::ParamSpec* spec = k.find_param(e.name);
        if (p == nullptr && spec != nullptr && spec->default_value) p = &*spec->default_value;
        if (p == nullptr || !p->is_number()) {
          throw Error(fmt::format("kernel '{}': body: param '{}' has no number", k.name, e.name));
        }
        return scalar_tensor(p->get<double>(), dtype);
      }
      case Kind::kNegate:
        return fmt::format("torch.neg({})", emit(e.args[0]));
      case Kind::kBinary:
        if (e.op == '/' && is_integer(dtype)) {
          return fmt::format("torch.div({}, {}, rounding_mode='trunc')", emit(e.args[0]),
                             emit(e.args[1]));
        }
        return fmt::format("({} {} {})", emit(e.args[0]), e.op, emit(e.args[1]));
      case Kind::kCall: {
        if (e.name == "max" || e.name == "min") {
          return fmt::format("torch.{}({}, {})", e.name == "max" ? "maximum" : "minimum",
                             emit(e.args[0]), emit(e.args[1]));
        }
        // A built-in elementwise kernel's formula: its own mapping.
        TorchCall unary{.kernel = e.name,
                        .output_names = {"result"},
                        .output_boxes = {points},
                        .output_dtypes = {dtype}};
        unary.inputs["x"].push_back(
            {.expr = emit(e.args[0]), .box = points, .dtype = dtype, .whole = points});
        return mappings().at(e.name)(unary).front();
      }
    }
    return {};
  };
  std::string value = emit(*k.body);
  if (folded.empty()) return {value};
  const ir::Monoid monoid = call.reductions.front().monoid;
  for (const ir::Reduction& r : call.reductions) {
    if (r.monoid != monoid) throw unmapped("its reduction dims fold with different monoids");
  }
  std::vector<std::string> dims;
  for (std::size_t d : folded) dims.push_back(std::to_string(d));
  switch (monoid) {
    case ir::Monoid::kSum:
      return {fmt::format("torch.sum({}, dim=({},))", value, fmt::join(dims, ", "))};
    case ir::Monoid::kMax:
      return {fmt::format("torch.amax({}, dim=({},))", value, fmt::join(dims, ", "))};
    case ir::Monoid::kMin:
      return {fmt::format("torch.amin({}, dim=({},))", value, fmt::join(dims, ", "))};
    case ir::Monoid::kProd:
      // torch.prod folds one dim at a time: the last first, so the positions hold.
      for (auto d = folded.rbegin(); d != folded.rend(); ++d) {
        value = fmt::format("torch.prod({}, dim={})", value, *d);
      }
      return {value};
  }
  return {value};
}

}  // namespace

std::vector<std::string> torch_expressions(const TorchCall& call) {
  const auto found = mappings().find(std::string(call.kernel));
  if (found == mappings().end() && call.body_kernel != nullptr && call.body_kernel->body) {
    return body_expressions(call);
  }
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
