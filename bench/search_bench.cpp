// bench/search_bench: how fast the optimizer searches (not part of `make test`; `make bench`).
//
//   search_bench [--evals N] [--budget S] [--seed N] [--best-known MS] [--skip-deep]
//                [--skip-block] [--layers L] [--genome-out FILE] [--price FILE]
//   search_bench --chain N [--graph FILE.tap] [--target NAME] [--start megatron8|SEED]
//                [--plans-out FILE] [--plans-in FILE]
//   search_bench --tap-out FILE [--layers L]
//   search_bench --train-tap FILE [--layers L] [--d D] [--seq S] [--batch B] [--heads H]
//                [--dtype bf16|f32]
//
// 1. Evaluations per second per core: `tapestry optimize` on examples/transformer_block.tap and
//    h100x8 (objectives time and memory, seed 1, N plans, default 2000) on 1 thread and on 2.
// 2. A 24-layer transformer (generated here: 4096 tokens, width 1024 = 16 heads of 64, MLP 4096,
//    bf16) on h100x64 with --tie-layers, for S seconds (default 60) on 2 threads, objective time,
//    seed N (default 1): when the fastest plan found first comes within 5% of the best known plan
//    — the best of the search's final plan, the standard plans priced here (cost/standard_plans.h:
//    data-parallel, megatron, megatron-rs, 2d on the target's dp × tp mesh, those that apply) and
//    --best-known (a makespan in ms, e.g. the best a longer run found) — and the best standard
//    plan's time over the search's best. Also the cold evaluation of each standard plan (the
//    Evaluator's memo cleared: the rewrites run) and the warm one.
// --skip-block skips 1; --layers L builds an L-layer transformer instead of 24; --genome-out
// writes the fastest genome found (the tied representatives' entries); --price FILE only prices
// such a genome on the L-layer transformer. --chain N does only 3: one Evaluator prices N plans
// of a mutation walk on FILE (default examples/transformer_block.tap) and target NAME (default
// h100x8), from SEED (a search seed: megatron, data-parallel, …, default megatron) or cost_bench's
// megatron8 plan, and prints plans/s, plans per CPU-second, the memo's misses and a checksum of
// the makespans (equal across builds that price alike); --plans-out FILE also writes the walk's
// plans, one JSON object a line (bench/walk_locality.py reads them), and --plans-in FILE prices
// the first N plans of such a file instead of walking: two builds whose mutations differ price
// the same plans. --tap-out FILE only writes the
// L-layer transformer (default 24) as a .tap program, for `tapestry optimize`
// (bench/optimize_mpi_band.sh).
// --train-tap writes a GPT-style training step (train_text below; default 24 layers, d 6144, 64
// sequences of 2048 tokens, 48 heads, bf16) as a .tap file for `tapestry optimize`
// (docs/optimizer.md, "Training steps").
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tapestry/cost/evaluator.h"
#include "tapestry/cost/standard_plans.h"
#include "tapestry/metakernel/signature_registry.h"
#include "tapestry/metakernel/tap_frontend.h"
#include "tapestry/search/mutate.h"
#include "tapestry/search/optimize.h"
#include "tapestry/search/plan_space.h"
#include "tapestry/support/error.h"

namespace {

using namespace tapestry;

ir::Graph build(const std::string& name, const std::string& text) {
  auto file = std::make_shared<metakernel::SourceFile>(name, text);
  metakernel::BuildResult built = metakernel::build_tap(file, metakernel::builtin_signatures());
  if (!built.ok()) throw Error("cannot build " + name);
  return std::move(*built.graph);
}

// Layer l of a transformer over `batch` sequences of `seq` tokens, `heads` heads of `dh`: reads
// X<l> and the layer's weights, writes X<l+1>.
std::string layer_text(int l, std::int64_t batch, std::int64_t seq, std::int64_t heads,
                       std::int64_t dh) {
  const std::string split = fmt::format("shape=[{}, {}, {}, {}]", batch, seq, heads, dh);
  // clang-format off
  return fmt::format(
      "Q{0} = permute(reshape(linear(X{0}, Wq{0}, bq{0}), {2}), perm=[0, 2, 1, 3])\n"
      "K{0} = permute(reshape(linear(X{0}, Wk{0}, bk{0}), {2}), perm=[0, 2, 1, 3])\n"
      "V{0} = permute(reshape(linear(X{0}, Wv{0}, bv{0}), {2}), perm=[0, 2, 1, 3])\n"
      "S{0} = mul(matmul(Q{0}, transpose(K{0})), Scale)\nP{0} = softmax(S{0})\n"
      "C{0} = matmul(P{0}, V{0})\n"
      "A{0} = linear(reshape(permute(C{0}, perm=[0, 2, 1, 3]), shape=[{3}, {4}]), Wo{0}, bo{0})\n"
      "R{0} = add(X{0}, A{0})\nM{0} = linear(gelu(linear(R{0}, Wa{0}, ba{0})), Wb{0}, bb{0})\n"
      "X{1} = add(R{0}, M{0})\n",
      l, l + 1, split, batch * seq, heads * dh);
  // clang-format on
}

std::string transformer_text(int layers) {
  std::string t = "X0: bf16[4096, 1024]\nScale: bf16[1]\n";
  for (int l = 0; l < layers; ++l) {
    t += fmt::format(
        "Wq{0}: bf16[1024, 1024]\nbq{0}: bf16[1024]\nWk{0}: bf16[1024, 1024]\nbk{0}: bf16[1024]\n"
        "Wv{0}: bf16[1024, 1024]\nbv{0}: bf16[1024]\nWo{0}: bf16[1024, 1024]\nbo{0}: bf16[1024]\n"
        "Wa{0}: bf16[4096, 1024]\nba{0}: bf16[4096]\nWb{0}: bf16[1024, 4096]\nbb{0}: bf16[1024]\n",
        l);
  }
  for (int l = 0; l < layers; ++l) t += layer_text(l, 4, 1024, 16, 64);
  return t + fmt::format("output X{}\n", layers);
}

// A GPT-style training step (--train-tap): `layers` transformer layers (the layer of
// transformer_text: Q/K/V projections, `heads` heads, scaled scores, softmax, the output
// projection, a residual, a GELU MLP of 4·d, a residual; no LayerNorm, no causal mask, no
// vocabulary head: the layer stack is what a plan divides), `batch` sequences of `seq` tokens,
// width `d`, bf16 (or `dtype`), an `mse` loss against a target T, `grad` of every weight (the
// gradients listed from the last layer to the first, so each layer's backward operations are named
// after it: `dWq23/…`) and an Adam update of each weight with its two moments (`update W <- Wn,
// …`).
std::string train_text(int layers, std::int64_t d, std::int64_t seq, std::int64_t batch,
                       std::int64_t heads, const std::string& dtype) {
  const std::int64_t n = batch * seq, f = 4 * d, dh = d / heads;
  std::string t =
      fmt::format("X0: {0}[{1}, {2}]\nT: {0}[{1}, {2}]\nScale: {0}[1]\nstep: i64[]\n", dtype, n, d);
  const auto weights = [&](int l) {
    return std::vector<std::pair<std::string, std::string>>{
        {fmt::format("Wq{}", l), fmt::format("[{}, {}]", d, d)},
        {fmt::format("bq{}", l), fmt::format("[{}]", d)},
        {fmt::format("Wk{}", l), fmt::format("[{}, {}]", d, d)},
        {fmt::format("bk{}", l), fmt::format("[{}]", d)},
        {fmt::format("Wv{}", l), fmt::format("[{}, {}]", d, d)},
        {fmt::format("bv{}", l), fmt::format("[{}]", d)},
        {fmt::format("Wo{}", l), fmt::format("[{}, {}]", d, d)},
        {fmt::format("bo{}", l), fmt::format("[{}]", d)},
        {fmt::format("Wa{}", l), fmt::format("[{}, {}]", f, d)},
        {fmt::format("ba{}", l), fmt::format("[{}]", f)},
        {fmt::format("Wb{}", l), fmt::format("[{}, {}]", d, f)},
        {fmt::format("bb{}", l), fmt::format("[{}]", d)}};
  };
  for (int l = 0; l < layers; ++l) {
    for (const auto& [w, shape] : weights(l)) {
      t += fmt::format("{0}: {2}{1}\n{0}_m: {2}{1}\n{0}_v: {2}{1}\n", w, shape, dtype);
    }
  }
  for (int l = 0; l < layers; ++l) t += layer_text(l, batch, seq, heads, dh);
  t += fmt::format("L = mse(X{}, T)\n", layers);
  std::vector<std::string> ws, ds;
  for (int l = layers - 1; l >= 0; --l) {
    for (const auto& [w, shape] : weights(l)) {
      ws.push_back(w);
      ds.push_back("d" + w);
    }
  }
  t += fmt::format("{} = grad(L, {})\n", fmt::join(ds, ", "), fmt::join(ws, ", "));
  std::vector<std::string> updates;
  for (const std::string& w : ws) {
    t += fmt::format("{0}n = adam({0}, d{0}, {0}_m, {0}_v, step)\n", w);
    updates.push_back(fmt::format("{0} <- {0}n, {0}_m <- {0}n.m_next, {0}_v <- {0}n.v_next", w));
  }
  t += "output L\n";
  for (const std::string& u : updates) t += fmt::format("update {}\n", u);
  return t;
}

void evaluations_per_second(std::uint64_t evals) {
  const std::string path = std::string(TAPESTRY_EXAMPLES) + "/transformer_block.tap";
  const ir::Graph g = build(path, [&] {
    std::FILE* f = std::fopen(path.c_str(), "r");
    std::string s;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
    std::fclose(f);
    return s;
  }());
  const cost::Target target = *cost::preset_target("h100x8");
  for (int threads : {1, 2}) {
    search::Optimizer opt(g, target,
                          {.objectives = {search::Objective::kTime, search::Objective::kMemory},
                           .seed = 1,
                           .threads = threads,
                           .max_evaluations = evals});
    const search::OptimizeResult r = opt.run();
    fmt::print(
        "transformer_block on h100x8, {} thread{}: {} plans in {:.2f} s = {:.0f} evaluations/s "
        "({:.0f} per core); front {}\n",
        threads, threads == 1 ? "" : "s", r.progress.evaluations, r.progress.seconds,
        r.progress.evaluations_per_s, r.progress.evaluations_per_s / threads,
        r.archive.front().size());
  }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string slurp(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) throw Error("cannot read " + path);
  std::string s;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
  std::fclose(f);
  return s;
}

// 3. --chain N: the evaluator alone, on a walk of the kind the search makes. From the seed plan
// `start` (cost_bench's megatron8 when --start megatron8, else a search seed of that name:
// "megatron", "data-parallel", …), N times: copy the current plan, apply mutate() (one to four
// mutations), price the copy, and move to it; every 32 steps the walk goes back to the start (a
// search mutates front members, which stay near the seeds). Prints the plans priced per second and
// the memo's misses; the walk is the same for every build (seed 1), so two builds' lines compare.
void mutation_chain(const std::string& graph_path, const std::string& target_name,
                    const std::string& start, std::uint64_t steps, const std::string& plans_out,
                    const std::string& plans_in) {
  const ir::Graph g = build(graph_path, slurp(graph_path));
  const cost::Target target = *cost::preset_target(target_name);
  const search::PlanSpace space(g, target, false);
  rewrite::Plan first;
  if (start == "megatron8") {
    first = rewrite::parse_plan(R"({"ops": {
  "Q/linear": {"split": {"out": 8}}, "K/linear": {"split": {"out": 8}},
  "V/linear": {"split": {"out": 8}}, "Scores/matmul": {"split": {"batch1": 8}},
  "Scores": {"split": {"d1": 8}}, "P": {"split": {"batch1": 8}}, "Ctx": {"split": {"batch1": 8}},
  "Attn": {"split": {"in": 8}}, "M/linear": {"split": {"out": 8}}, "M/gelu": {"split": {"d1": 8}},
  "M": {"split": {"in": 8}}}, "fuse": "auto"})");
  } else {
    bool found = false;
    for (const search::SeedPlan& s : search::seed_plans(space)) {
      if (s.name == start) {
        first = s.genome;
        found = true;
      }
    }
    if (!found) throw Error("no seed plan named " + start);
  }
  std::vector<rewrite::Plan> plans;
  search::Rng rng(1);
  rewrite::Plan current = first;
  if (plans_in.empty()) {
    for (std::uint64_t i = 0; i < steps; ++i) {
      if (i % 32 == 0) current = first;
      search::mutate(space, current, rng);
      plans.push_back(current);
    }
  } else {  // the first `steps` plans of a walk written by --plans-out (any build's)
    std::ifstream in(plans_in);
    if (!in) throw Error("cannot read " + plans_in);
    for (std::string line; plans.size() < steps && std::getline(in, line);) {
      if (!line.empty()) plans.push_back(rewrite::parse_plan(line));
    }
    steps = plans.size();
  }
  if (!plans_out.empty()) {
    std::FILE* f = std::fopen(plans_out.c_str(), "w");
    if (f == nullptr) throw Error("cannot write " + plans_out);
    for (const rewrite::Plan& plan : plans) fmt::print(f, "{}\n", plan.to_json().dump());
    std::fclose(f);
  }
  cost::Evaluator ev(g, target);
  double sum = 0;
  std::uint64_t refused = 0;
  const auto start_time = std::chrono::steady_clock::now();
  const std::clock_t start_cpu = std::clock();
  for (const rewrite::Plan& plan : plans) {
    try {
      sum += ev.evaluate(plan).makespan_s;
    } catch (const Error&) {
      ++refused;
    }
  }
  const double seconds = seconds_since(start_time);
  const double cpu = static_cast<double>(std::clock() - start_cpu) / CLOCKS_PER_SEC;
  const cost::EvaluatorStats& stats = ev.stats();
  fmt::print(
      "chain of {} mutations of {} on {} ({}): {:.2f} s = {:.1f} plans/s ({:.1f} per CPU-second); "
      "{} memo misses ({} incremental: {} components rewritten, {} reused), {} reference, {} "
      "refused; checksum {:.9e}\n",
      steps, start, graph_path.substr(graph_path.find_last_of('/') + 1), target_name, seconds,
      static_cast<double>(steps) / seconds, static_cast<double>(steps) / cpu, stats.rewrites_run,
      stats.incremental, stats.components_rewritten, stats.components_reused, stats.reference,
      refused, sum);
}

void deep_transformer(double budget_s, std::uint64_t seed, double best_known_ms,
                      const std::string& genome_out, int kLayers, const std::string& price) {
  const ir::Graph g = build("transformer24.tap", transformer_text(kLayers));
  const cost::Target target = *cost::preset_target("h100x64");
  cost::Evaluator ev(g, target);
  if (!price.empty()) {
    const search::PlanSpace space(g, target, true);
    std::FILE* f = std::fopen(price.c_str(), "r");
    std::string text;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
    std::fclose(f);
    const rewrite::Plan genome = rewrite::parse_plan(text, price);
    const cost::CostVector c = ev.evaluate(space.expand(genome));
    fmt::print("{}: {:.3f} ms on {} layers\n", price, c.makespan_s * 1e3, kLayers);
    return;
  }
  double known = best_known_ms > 0 ? best_known_ms * 1e-3 : 1e30;
  // The baselines: the standard plans (cost/standard_plans.h) that apply to this graph on this
  // target — what an engineer writes first, each cutting every operation it can.
  double best_standard = 1e30;
  std::string best_standard_name = "none";
  for (const cost::StandardPlan& s : cost::standard_plans(g, target)) {
    if (!s.plan) {
      fmt::print("standard {}: does not apply ({})\n", s.name, s.reason);
      continue;
    }
    ev.clear_memo();
    const auto start = std::chrono::steady_clock::now();
    const cost::CostVector c = ev.evaluate(*s.plan);
    const double cold = seconds_since(start);
    const auto warm_start = std::chrono::steady_clock::now();
    ev.evaluate(*s.plan);
    const double warm = seconds_since(warm_start);
    fmt::print(
        "standard {} ({}): {:.3f} ms, {:.1f} MiB; priced cold in {:.1f} ms, warm in {:.1f} ms\n",
        s.name, s.summary, c.makespan_s * 1e3, static_cast<double>(c.peak_memory_bytes) / (1 << 20),
        cold * 1e3, warm * 1e3);
    known = std::min(known, c.makespan_s);
    if (c.makespan_s < best_standard) {
      best_standard = c.makespan_s;
      best_standard_name = s.name;
    }
  }
  std::vector<std::pair<double, double>> trajectory;  // (seconds, best time)
  search::OptimizeOptions o{.objectives = {search::Objective::kTime},
                            .seed = seed,
                            .threads = 2,
                            .time_budget_s = budget_s,
                            .tie_layers = true};
  o.on_progress = [&](const search::Progress& p) {
    if (!p.best.empty()) trajectory.emplace_back(p.seconds, p.best[0]);
    return true;
  };
  search::Optimizer opt(g, target, o);
  const search::OptimizeResult r = opt.run();
  known = std::min(known, r.archive.front().empty() ? known : r.archive.front()[0].score[0]);
  double reached = -1;
  for (const auto& [s, best] : trajectory) {
    if (best <= 1.05 * known) {
      reached = s;
      break;
    }
  }
  fmt::print(
      "24-layer transformer on h100x64 (tie-layers, {} decisions of {} operations): {} plans "
      "(and {} of the first 2 layers, best {:.3f} ms after {:.1f} s) in "
      "{:.1f} s ({:.1f}/s); best {:.3f} ms; best known {:.3f} ms; within 5% after {}\n",
      opt.space().representatives().size(), opt.space().operations().size(), r.progress.evaluations,
      r.progress.prefix_evaluations, trajectory.empty() ? 0 : trajectory.front().second * 1e3,
      trajectory.empty() ? 0 : trajectory.front().first, r.progress.seconds,
      r.progress.evaluations_per_s,
      r.archive.front().empty() ? 0 : r.archive.front()[0].score[0] * 1e3, known * 1e3,
      reached < 0 ? std::string("(not reached)") : fmt::format("{:.1f} s", reached));
  if (!r.archive.front().empty() && best_standard < 1e30) {
    fmt::print("best standard plan {} {:.3f} ms / the search's best {:.3f} ms = {:.2f}\n",
               best_standard_name, best_standard * 1e3, r.archive.front()[0].score[0] * 1e3,
               best_standard / r.archive.front()[0].score[0]);
  }
  if (!genome_out.empty() && !r.archive.front().empty()) {
    std::FILE* f = std::fopen(genome_out.c_str(), "w");
    if (f == nullptr) throw Error("cannot write " + genome_out);
    fmt::print(f, "{}\n", r.archive.front()[0].genome.to_json().dump(2));
    std::fclose(f);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t evals = 2000;
  double budget = 60;
  std::uint64_t seed = 1;
  double best_known_ms = 0;
  bool deep = true;
  std::string genome_out;
  std::string price;
  std::string tap_out;
  int layers = 24;
  std::string chain_graph, chain_target = "h100x8", chain_start = "megatron", plans_out, plans_in;
  std::uint64_t chain = 0;
  std::string train_tap;
  std::int64_t train_d = 6144, train_seq = 2048, train_batch = 64, train_heads = 48;
  std::string train_dtype = "bf16";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--evals") == 0 && i + 1 < argc) evals = std::stoull(argv[++i]);
    if (std::strcmp(argv[i], "--budget") == 0 && i + 1 < argc) budget = std::stod(argv[++i]);
    if (std::strcmp(argv[i], "--seed") == 0 && i + 1 < argc) seed = std::stoull(argv[++i]);
    if (std::strcmp(argv[i], "--best-known") == 0 && i + 1 < argc)
      best_known_ms = std::stod(argv[++i]);
    if (std::strcmp(argv[i], "--skip-deep") == 0) deep = false;
    if (std::strcmp(argv[i], "--genome-out") == 0 && i + 1 < argc) genome_out = argv[++i];
    if (std::strcmp(argv[i], "--skip-block") == 0) evals = 0;
    if (std::strcmp(argv[i], "--layers") == 0 && i + 1 < argc) layers = std::stoi(argv[++i]);
    if (std::strcmp(argv[i], "--price") == 0 && i + 1 < argc) price = argv[++i];
    if (std::strcmp(argv[i], "--chain") == 0 && i + 1 < argc) chain = std::stoull(argv[++i]);
    if (std::strcmp(argv[i], "--tap-out") == 0 && i + 1 < argc) tap_out = argv[++i];
    if (std::strcmp(argv[i], "--graph") == 0 && i + 1 < argc) chain_graph = argv[++i];
    if (std::strcmp(argv[i], "--target") == 0 && i + 1 < argc) chain_target = argv[++i];
    if (std::strcmp(argv[i], "--start") == 0 && i + 1 < argc) chain_start = argv[++i];
    if (std::strcmp(argv[i], "--plans-out") == 0 && i + 1 < argc) plans_out = argv[++i];
    if (std::strcmp(argv[i], "--plans-in") == 0 && i + 1 < argc) plans_in = argv[++i];
    if (std::strcmp(argv[i], "--train-tap") == 0 && i + 1 < argc) train_tap = argv[++i];
    if (std::strcmp(argv[i], "--d") == 0 && i + 1 < argc) train_d = std::stoll(argv[++i]);
    if (std::strcmp(argv[i], "--seq") == 0 && i + 1 < argc) train_seq = std::stoll(argv[++i]);
    if (std::strcmp(argv[i], "--batch") == 0 && i + 1 < argc) train_batch = std::stoll(argv[++i]);
    if (std::strcmp(argv[i], "--heads") == 0 && i + 1 < argc) train_heads = std::stoll(argv[++i]);
    if (std::strcmp(argv[i], "--dtype") == 0 && i + 1 < argc) train_dtype = argv[++i];
  }
  if (!train_tap.empty()) {
    if (train_d % train_heads != 0) throw Error("--heads must divide --d");
    std::FILE* f = std::fopen(train_tap.c_str(), "w");
    if (f == nullptr) throw Error("cannot write " + train_tap);
    const std::string text =
        train_text(layers, train_d, train_seq, train_batch, train_heads, train_dtype);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
    fmt::print(
        "wrote {}: a {}-layer training step, d {}, {} sequences of {} tokens, {} heads, {}\n",
        train_tap, layers, train_d, train_batch, train_seq, train_heads, train_dtype);
    return 0;
  }
  if (!tap_out.empty()) {
    std::FILE* f = std::fopen(tap_out.c_str(), "w");
    if (f == nullptr) throw Error("cannot write " + tap_out);
    const std::string text = transformer_text(layers);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
    return 0;
  }
  if (chain > 0) {
    if (chain_graph.empty())
      chain_graph = std::string(TAPESTRY_EXAMPLES) + "/transformer_block.tap";
    mutation_chain(chain_graph, chain_target, chain_start, chain, plans_out, plans_in);
    return 0;
  }
  if (evals > 0) evaluations_per_second(evals);
  if (deep) deep_transformer(budget, seed, best_known_ms, genome_out, layers, price);
  return 0;
}
