// The target and the table of a GPU calibration (calibrate_cuda.h). Host-side only, built with
// or without CUDA; the measurements are calibrate_cuda_measure.cpp (CUDA builds).
#include "tapestry/gpu/calibrate_cuda.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <ctime>

#include "tapestry/support/error.h"

#include "tapestry/gpu/cuda.h"

namespace tapestry::gpu {

namespace {

// "NVIDIA H100 80GB HBM3" → "h100"; "gpu" when no word has a digit.
std::string short_gpu_name(const std::string& name) {
  std::string word;
  for (std::size_t i = 0; i <= name.size(); ++i) {
    if (i == name.size() || name[i] == ' ') {
      const bool digit = std::any_of(word.begin(), word.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
      });
      if (digit) {
        std::string out;
        for (char c : word) {
          if (std::isalnum(static_cast<unsigned char>(c))) {
            out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          }
        }
        if (!out.empty()) return out;
      }
      word.clear();
    } else {
      word += name[i];
    }
  }
  return "gpu";
}

std::string si(double value, std::string_view unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int p = 0;
  while (p < 5 && value >= 1000) {
    value /= 1000;
    ++p;
  }
  return fmt::format("{:.3g} {}{}", value, prefixes[p], unit);
}

std::string seconds_text(double s) {
  return s < 1e-3 ? fmt::format("{:.2f} µs", s * 1e6) : fmt::format("{:.3f} ms", s * 1e3);
}

struct Dtype {
  const char* calibration;  // the CudaGemmResult dtype
  ir::DType dtype;
};
constexpr Dtype kTargetDtypes[] = {{"float32", ir::DType::kFloat32},
                                   {"bfloat16", ir::DType::kBFloat16},
                                   {"float16", ir::DType::kFloat16},
                                   {"float64", ir::DType::kFloat64}};

// One member of the target: its value here, the preset's, and where it came from.
struct Member {
  std::string name;
  std::string value;
  std::string preset;
  bool measured = false;
  std::string from;  // the measurement it came from
  std::string set;   // neither measured nor the preset's: what set it
};

std::vector<Member> members(const CudaCalibration& c, const cost::Target& target,
                            const cost::Target& preset) {
  const cost::DeviceType& d = target.device_types.front();
  const cost::DeviceType& p = preset.device_types.front();
  std::vector<Member> out;
  for (const Dtype& t : kTargetDtypes) {
    const CudaGemmResult* g = c.best_gemm(t.calibration);
    const auto here = d.peak_flops.find(t.dtype);
    const auto there = p.peak_flops.find(t.dtype);
    if (here == d.peak_flops.end() && there == p.peak_flops.end()) continue;
    out.push_back(
        {fmt::format("peak_flops {}", t.calibration),
         here == d.peak_flops.end() ? "-" : si(here->second, "FLOP/s"),
         there == p.peak_flops.end() ? "-" : si(there->second, "FLOP/s"), g != nullptr,
         g == nullptr ? "" : fmt::format("gemm {} {}×{}×{}", g->dtype, g->m, g->n, g->k)});
  }
  const auto text = [](const std::vector<cost::GemmEfficiency>& table) {
    std::string s;
    for (const cost::GemmEfficiency& e : table) {
      s += fmt::format("{}[{:.2g}, {:.2f}]", s.empty() ? "" : " ", e.flops, e.efficiency);
    }
    return s.empty() ? std::string("-") : s;
  };
  const auto dtype_table = [&](const cost::DeviceType& t, ir::DType dtype) {
    const auto found = t.dtype_gemm_efficiency.find(dtype);
    return found == t.dtype_gemm_efficiency.end() ? std::string("-") : text(found->second);
  };
  const bool bf16 = c.best_gemm("bfloat16") != nullptr;
  out.push_back({"gemm_efficiency", text(d.gemm_efficiency), text(p.gemm_efficiency), true,
                 bf16 ? "gemm bfloat16 squares" : "gemm float32 squares"});
  for (const auto& [dtype, table] : d.dtype_gemm_efficiency) {
    const std::string name(ir::dtype_name(dtype));
    out.push_back({"gemm_efficiency " + name, text(table), dtype_table(p, dtype), true,
                   fmt::format("gemm {} squares", name)});
  }
  out.push_back({"streams", fmt::format("{}", d.streams), fmt::format("{}", p.streams), false, "",
                 "the CUDA executor's default (run --device cuda --streams)"});
  out.push_back({"fused_passes", d.fused_passes ? "true" : "false",
                 p.fused_passes ? "true" : "false", false, "",
                 "the CUDA executor: a kernel per fused stage"});
  out.push_back({"efficiency", fmt::format("{:.2f}", d.efficiency),
                 fmt::format("{:.2f}", p.efficiency), true, "peak = a measured rate"});
  const CudaRateResult* copy = c.find_rate("device copy");
  out.push_back({"memory_bandwidth_Bps", si(d.memory_bandwidth_Bps, "B/s"),
                 si(p.memory_bandwidth_Bps, "B/s"), copy != nullptr, "device copy"});
  out.push_back({"bandwidth_efficiency", fmt::format("{:.2f}", d.bandwidth_efficiency),
                 fmt::format("{:.2f}", p.bandwidth_efficiency), true,
                 "bandwidth = a measured rate"});
  const bool cached = d.cache_bytes > 0;
  out.push_back({"cache",
                 cached ? fmt::format("{} MB at {}", d.cache_bytes / 1000000,
                                      si(d.cache_bandwidth_Bps, "B/s"))
                        : "-",
                 p.cache_bytes > 0 ? fmt::format("{} MB at {}", p.cache_bytes / 1000000,
                                                 si(p.cache_bandwidth_Bps, "B/s"))
                                   : "-",
                 cached, cached ? "cache copy" : "not faster than device copy, or not measured"});
  const CudaRateResult* node = c.find_rate("graph node");
  out.push_back({"launch_s", seconds_text(d.launch_s), seconds_text(p.launch_s), node != nullptr,
                 "graph node"});
  const CudaRateResult* run = c.find_rate("run overhead");
  out.push_back({"run_overhead_s", seconds_text(target.run_overhead_s),
                 seconds_text(preset.run_overhead_s), run != nullptr, "run overhead"});
  out.push_back({"memory_bytes",
                 fmt::format("{:.1f} GB", static_cast<double>(d.memory_bytes) / 1e9),
                 fmt::format("{:.1f} GB", static_cast<double>(p.memory_bytes) / 1e9),
                 c.memory_bytes > 0, "cudaMemGetInfo"});
  if (target.host) {
    const bool bw = c.find_rate("host→device") != nullptr && c.find_rate("device→host") != nullptr;
    out.push_back({"links.host bandwidth", si(target.host->bandwidth_Bps, "B/s"),
                   preset.host ? si(preset.host->bandwidth_Bps, "B/s") : "-", bw,
                   "the slower of host→device and device→host"});
    out.push_back({"links.host latency", seconds_text(target.host->latency_s),
                   preset.host ? seconds_text(preset.host->latency_s) : "-",
                   c.find_rate("host latency") != nullptr, "host latency"});
  }
  out.push_back({"links.intra_node", si(target.intra_node.bandwidth_Bps, "B/s"),
                 si(preset.intra_node.bandwidth_Bps, "B/s"), false, "(one device: unused)"});
  out.push_back({"idle_w, busy_w", fmt::format("{:g} W, {:g} W", d.idle_w, d.busy_w),
                 fmt::format("{:g} W, {:g} W", p.idle_w, p.busy_w), false, ""});
  return out;
}

// The efficiency by FLOPs of `dtype`'s square GEMMs (target.h "gemm_efficiency"): each
// square's rate over the dtype's best, never falling as the squares grow.
std::vector<cost::GemmEfficiency> squares_table(const CudaCalibration& c, std::string_view dtype) {
  const double peak = c.best_gemm(dtype)->rate();
  std::vector<const CudaGemmResult*> squares;
  for (const CudaGemmResult& g : c.gemms) {
    if (g.dtype == dtype && g.m == g.n && g.n == g.k && g.seconds > 0) squares.push_back(&g);
  }
  std::sort(squares.begin(), squares.end(),
            [](const CudaGemmResult* a, const CudaGemmResult* b) { return a->m < b->m; });
  std::vector<cost::GemmEfficiency> table;
  double floor = 0;
  for (const CudaGemmResult* g : squares) {
    if (!table.empty() && g->flops() <= table.back().flops) continue;
    floor = std::max(floor, std::min(1.0, g->rate() / peak));
    table.push_back({g->flops(), floor});
  }
  return table;
}

}  // namespace

const CudaRateResult* CudaCalibration::find_rate(std::string_view name) const {
  for (const CudaRateResult& r : rates) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

const CudaGemmResult* CudaCalibration::best_gemm(std::string_view dtype) const {
  const CudaGemmResult* best = nullptr;
  for (const CudaGemmResult& g : gemms) {
    if (g.dtype == dtype && g.seconds > 0 && (best == nullptr || g.rate() > best->rate())) {
      best = &g;
    }
  }
  return best;
}

cost::Target cuda_calibrated_target(const CudaCalibration& c, const cost::Target& preset) {
  if (preset.device_types.empty()) {
    throw Error(
        fmt::format("target {}: no device type to take unmeasured constants from", preset.name));
  }
  const CudaGemmResult* f32 = c.best_gemm("float32");
  const CudaRateResult* copy = c.find_rate("device copy");
  if (f32 == nullptr || copy == nullptr || copy->value <= 0) {
    throw Error("a GPU calibration needs a float32 GEMM and the device copy rate");
  }
  const cost::DeviceType& base = preset.device_types.front();
  const std::string gpu = short_gpu_name(c.gpu_name);

  cost::DeviceType d;
  d.name = gpu;
  d.kind = "gpu";
  for (const Dtype& t : kTargetDtypes) {
    if (const CudaGemmResult* g = c.best_gemm(t.calibration)) {
      d.peak_flops[t.dtype] = g->rate();
    } else if (auto p = base.peak_flops.find(t.dtype); p != base.peak_flops.end()) {
      d.peak_flops[t.dtype] = p->second;
    }
  }
  d.efficiency = 1.0;  // peak_flops is an achieved rate
  // GEMM efficiency by size: the device type's table from the squares of the tensor-core dtype
  // (bf16) when measured; every other measured dtype its own (a float32 GEMM fills the GPU at
  // far fewer FLOPs than a bf16 one: target.h).
  const std::string table_dtype = c.best_gemm("bfloat16") != nullptr ? "bfloat16" : "float32";
  d.gemm_efficiency = squares_table(c, table_dtype);
  for (const Dtype& t : kTargetDtypes) {
    if (t.calibration == table_dtype || c.best_gemm(t.calibration) == nullptr) continue;
    std::vector<cost::GemmEfficiency> own = squares_table(c, t.calibration);
    if (!own.empty()) d.dtype_gemm_efficiency[t.dtype] = std::move(own);
  }
  // The CUDA executor spreads independent steps over its streams (CudaExecutorOptions).
  d.streams = CudaExecutorOptions{}.streams;
  // It runs a fused operation's stages as kernels of their own (docs/gpu.md).
  d.fused_passes = true;
  d.memory_bandwidth_Bps = copy->value;
  d.bandwidth_efficiency = 1.0;
  if (const CudaRateResult* cache = c.find_rate("cache copy");
      cache != nullptr && c.l2_bytes > 0 && cache->value > copy->value) {
    d.cache_bytes = c.l2_bytes / 2;
    d.cache_bandwidth_Bps = cache->value;
  }
  const CudaRateResult* node = c.find_rate("graph node");
  d.launch_s = node != nullptr ? node->value : base.launch_s;
  d.memory_bytes = c.memory_bytes > 0 ? c.memory_bytes : base.memory_bytes;
  d.idle_w = base.idle_w;
  d.busy_w = base.busy_w;

  cost::Target t;
  t.name = gpu + "-measured";
  const std::string date = fmt::format("{:%Y-%m-%d}", fmt::gmtime(std::time(nullptr)));
  t.about = fmt::format(
      "one {} ({} SMs), measured by tapestry calibrate --device cuda on {}; "
      "links and power from {}",
      c.gpu_name, c.sm_count, date, preset.name);
  t.device_types.push_back(d);
  t.devices.push_back({"gpu:0", 0, 0, 0});
  t.intra_node = preset.intra_node;
  const CudaRateResult* h2d = c.find_rate("host→device");
  const CudaRateResult* d2h = c.find_rate("device→host");
  const CudaRateResult* latency = c.find_rate("host latency");
  if (h2d != nullptr && d2h != nullptr) {
    t.host = cost::Link{
        std::min(h2d->value, d2h->value),
        latency != nullptr ? latency->value : (preset.host ? preset.host->latency_s : 0.0)};
  } else {
    t.host = preset.host;
  }
  t.inputs = preset.inputs;
  t.outputs = preset.outputs;
  if (const CudaRateResult* run = c.find_rate("run overhead")) t.run_overhead_s = run->value;

  nlohmann::json gemms = nlohmann::json::array();
  for (const CudaGemmResult& g : c.gemms) {
    gemms.push_back({{"dtype", g.dtype},
                     {"m", g.m},
                     {"n", g.n},
                     {"k", g.k},
                     {"seconds", g.seconds},
                     {"flops_per_s", g.rate()},
                     {"runs", g.runs}});
  }
  nlohmann::json rates = nlohmann::json::object();
  for (const CudaRateResult& r : c.rates) {
    rates[r.name] = {{"shape", r.shape},
                     {"unit", r.unit},
                     {"value", r.value},
                     {"seconds", r.seconds},
                     {"runs", r.runs}};
  }
  nlohmann::json from_preset = nlohmann::json::array();
  for (const Member& m : members(c, t, preset)) {
    if (!m.measured && m.set.empty()) from_preset.push_back(m.name);
  }
  t.calibration = {{"date", date},
                   {"gpu", c.gpu_name},
                   {"sm_count", c.sm_count},
                   {"compute_capability", c.compute_capability},
                   {"l2_bytes", c.l2_bytes},
                   {"seconds", c.seconds},
                   {"elapsed_s", c.elapsed_s},
                   {"gemms", std::move(gemms)},
                   {"rates", std::move(rates)},
                   {"preset", preset.name},
                   {"from_preset", std::move(from_preset)}};
  return t;
}

std::string cuda_calibration_table(const CudaCalibration& c, const cost::Target& preset) {
  std::string out = fmt::format(
      "{} ({} SMs, sm_{}, {:.1f} GiB, L2 {} MiB); {:.1f} s of measuring\n", c.gpu_name, c.sm_count,
      c.compute_capability, static_cast<double>(c.memory_bytes) / double(1 << 30), c.l2_bytes >> 20,
      c.elapsed_s);
  out += fmt::format("{:<22} {:<30} {:>12} {:>16} {:>5}\n", "benchmark", "shape", "time", "rate",
                     "runs");
  for (const CudaGemmResult& g : c.gemms) {
    out += fmt::format("{:<22} {:<30} {:>12} {:>16} {:>5}\n", fmt::format("gemm {}", g.dtype),
                       fmt::format("{}×{}×{}", g.m, g.n, g.k), seconds_text(g.seconds),
                       si(g.rate(), "FLOP/s"), g.runs);
  }
  for (const CudaRateResult& r : c.rates) {
    out +=
        fmt::format("{:<22} {:<30} {:>12} {:>16} {:>5}\n", r.name, r.shape, seconds_text(r.seconds),
                    r.unit == "s" ? seconds_text(r.value) : si(r.value, r.unit), r.runs);
  }
  const cost::Target target = cuda_calibrated_target(c, preset);
  out += fmt::format("\n{:<22} {:<34} {:<34} {}\n", "target member", target.name, preset.name,
                     "source");
  for (const Member& m : members(c, target, preset)) {
    out += fmt::format(
        "{:<22} {:<34} {:<34} {}\n", m.name, m.value, m.preset,
        m.measured       ? fmt::format("measured: {}", m.from)
        : !m.set.empty() ? m.set
                         : fmt::format("{}'s{}", preset.name, m.from.empty() ? "" : " " + m.from));
  }
  return out;
}

#ifndef TAPESTRY_HAVE_CUDA
CudaCalibration calibrate_cuda(int /*device*/, double /*seconds*/,
                               const std::function<void(std::string_view)>& /*progress*/) {
  throw Error(fmt::format("--device cuda: {}", unavailable_reason()));
}
#endif

}  // namespace tapestry::gpu
