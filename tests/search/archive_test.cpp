// The Pareto archive (dominance, constraints, duplicates, best), the hypervolume against a
// brute-force cell count, and the objective and size parsers.
#include "tapestry/search/archive.h"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <regex>
#include <set>

#include "tapestry/search/front_plot.h"
#include "tapestry/support/error.h"

namespace tapestry::search {
namespace {

// A CostVector with the given time and memory (and devices, energy).
cost::CostVector cv(double time, std::int64_t memory, std::int64_t devices = 1, double energy = 1) {
  cost::CostVector c;
  c.makespan_s = time;
  c.peak_memory_bytes = memory;
  c.devices_used = devices;
  c.energy_j = energy;
  return c;
}

rewrite::Plan named(const std::string& name) {
  rewrite::Plan p;
  p.ops[name].split["d0"] = 2;
  return p;
}

ParetoArchive::Offer offer(ParetoArchive& a, const std::string& name, const cost::CostVector& c) {
  return a.offer(named(name), named(name), c, 0);
}

std::vector<std::string> names(const ParetoArchive& a) {
  std::vector<std::string> out;
  for (const ArchiveEntry& e : a.front()) out.push_back(e.plan.ops.begin()->first);
  return out;
}

TEST(Dominance, Table) {
  struct Case {
    std::vector<double> a, b;
    bool dominates;
  };
  const Case cases[] = {{{1, 1}, {2, 2}, true},       {{1, 2}, {2, 1}, false},
                        {{1, 1}, {1, 1}, false},      {{1, 1}, {1, 2}, true},
                        {{2, 2}, {1, 1}, false},      {{1, 2, 3}, {1, 2, 4}, true},
                        {{0, 5, 3}, {1, 2, 4}, false}};
  for (const Case& c : cases) EXPECT_EQ(dominates(c.a, c.b), c.dominates);
}

TEST(Archive, WorkedExampleOfTheHeader) {
  ParetoArchive a({Objective::kTime, Objective::kMemory}, {});
  EXPECT_EQ(offer(a, "A", cv(2, 8)), ParetoArchive::Offer::kAdded);
  EXPECT_EQ(offer(a, "B", cv(1, 9)), ParetoArchive::Offer::kAdded);
  EXPECT_EQ(names(a), (std::vector<std::string>{"B", "A"}));  // sorted by score
  EXPECT_EQ(offer(a, "C", cv(2, 9)), ParetoArchive::Offer::kDominated);
  EXPECT_EQ(offer(a, "D", cv(1, 8)), ParetoArchive::Offer::kAdded);
  EXPECT_EQ(names(a), (std::vector<std::string>{"D"}));
}

TEST(Archive, AnEqualScoreKeepsTheFirst) {
  ParetoArchive a({Objective::kTime}, {});
  offer(a, "first", cv(1, 8));
  EXPECT_EQ(offer(a, "second", cv(1, 1)), ParetoArchive::Offer::kDuplicate);
  EXPECT_EQ(names(a), (std::vector<std::string>{"first"}));
}

TEST(Archive, InfeasiblePlansNeverEnterTheFrontHoweverGood) {
  ParetoArchive a({Objective::kTime, Objective::kMemory},
                  {.max_memory_per_device = 100, .max_devices = 4});
  EXPECT_EQ(offer(a, "ok", cv(5, 100, 4)), ParetoArchive::Offer::kAdded);
  EXPECT_EQ(offer(a, "over-cap", cv(1, 101, 1)), ParetoArchive::Offer::kInfeasible);
  EXPECT_EQ(offer(a, "too-many", cv(1, 10, 5)), ParetoArchive::Offer::kInfeasible);
  cost::CostVector unfit = cv(0.1, 1, 1);
  unfit.fits = false;  // over the target's own memory
  EXPECT_EQ(offer(a, "unfit", unfit), ParetoArchive::Offer::kInfeasible);
  EXPECT_EQ(names(a), (std::vector<std::string>{"ok"}));
}

TEST(Archive, BestBreaksTiesByTheOtherObjectives) {
  ParetoArchive a({Objective::kMemory, Objective::kTime}, {});
  offer(a, "small-slow", cv(3, 10));
  offer(a, "big-fast", cv(1, 30));
  offer(a, "mid", cv(2, 20));
  EXPECT_EQ(a.best(Objective::kTime)->plan.ops.begin()->first, "big-fast");
  EXPECT_EQ(a.best(Objective::kMemory)->plan.ops.begin()->first, "small-slow");
  // Not an archive objective: still answered from the front (devices all 1: the first by score).
  EXPECT_EQ(a.best(Objective::kDevices)->plan.ops.begin()->first, "small-slow");
  EXPECT_EQ(ParetoArchive({Objective::kTime}, {}).best(Objective::kTime), nullptr);
}

TEST(Hypervolume, WorkedExamples) {
  const std::vector<std::vector<double>> front = {{1, 8}, {2, 5}};
  const std::vector<double> r = {3, 10};
  EXPECT_DOUBLE_EQ(hypervolume(front, r), 7);
  EXPECT_DOUBLE_EQ(hypervolume(std::vector<std::vector<double>>{{1}}, std::vector<double>{4}), 3);
  // A point outside the reference adds nothing; an empty front has none.
  EXPECT_DOUBLE_EQ(hypervolume(std::vector<std::vector<double>>{{1, 11}}, r), 0);
  EXPECT_DOUBLE_EQ(hypervolume(std::vector<std::vector<double>>{}, r), 0);
  // The unit cube's corner in 3-D and 4-D.
  EXPECT_DOUBLE_EQ(
      hypervolume(std::vector<std::vector<double>>{{0, 0, 0}}, std::vector<double>{1, 2, 3}), 6);
  EXPECT_DOUBLE_EQ(hypervolume(std::vector<std::vector<double>>{{0, 0, 0, 0}, {1, 1, 1, 1}},
                               std::vector<double>{2, 2, 2, 2}),
                   16);
}

// The oracle: with integer points in [0, 5)^d and reference 5, the hypervolume is the number of
// unit cells [c, c + 1) some point is <= c of.
RC_GTEST_PROP(HypervolumeProperties, EqualsTheDominatedCellCount, ()) {
  const auto d = *rc::gen::inRange<std::size_t>(1, 5);
  const auto n = *rc::gen::inRange<std::size_t>(0, 9);
  std::vector<std::vector<double>> points;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<double> p;
    for (std::size_t k = 0; k < d; ++k) p.push_back(*rc::gen::inRange(0, 6));  // 5: outside
    points.push_back(p);
  }
  std::size_t cells = 0;
  std::vector<int> c(d, 0);
  for (bool more = true; more;) {
    const bool dominated = std::any_of(points.begin(), points.end(), [&](const auto& p) {
      for (std::size_t k = 0; k < d; ++k) {
        if (p[k] > c[k]) return false;
      }
      return true;
    });
    cells += dominated ? 1 : 0;
    more = false;
    for (std::size_t k = 0; k < d && !more; ++k) {
      if (++c[k] < 5) {
        more = true;
      } else {
        c[k] = 0;
      }
    }
  }
  const std::vector<double> reference(d, 5);
  RC_ASSERT(hypervolume(points, reference) == static_cast<double>(cells));
}

TEST(Objectives, ParseAndRefuse) {
  EXPECT_EQ(parse_objectives("time,memory"),
            (std::vector<Objective>{Objective::kTime, Objective::kMemory}));
  EXPECT_EQ(parse_objectives("energy").size(), 1u);
  for (const char* bad : {"", "time,", "speed", "time,time", "Time", "time memory"}) {
    EXPECT_THROW(parse_objectives(bad), Error) << bad;
  }
  try {
    parse_objectives("time,speed");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown objective 'speed'"), std::string::npos);
  }
}

TEST(Objectives, ByteSizes) {
  EXPECT_EQ(parse_byte_size("40G", "--max"), std::int64_t{40} << 30);
  EXPECT_EQ(parse_byte_size("512MiB", "--max"), std::int64_t{512} << 20);
  EXPECT_EQ(parse_byte_size("1.5k", "--max"), 1536);
  EXPECT_EQ(parse_byte_size("40e9", "--max"), 40000000000);
  for (const char* bad : {"", "G", "-1G", "0", "12Q", "1e30", "nan"}) {
    EXPECT_THROW(parse_byte_size(bad, "--max"), Error) << bad;
  }
}

TEST(Objectives, Violation) {
  EXPECT_FALSE(violation(cv(1, 100, 2), {.max_memory_per_device = 100, .max_devices = 2}));
  EXPECT_EQ(*violation(cv(1, 2 << 20, 2), {.max_memory_per_device = 1 << 20, .max_devices = 0}),
            "peak memory 2.0 MiB on one device exceeds the cap 1.0 MiB");
  EXPECT_EQ(*violation(cv(1, 1, 3), {.max_memory_per_device = 0, .max_devices = 2}),
            "3 devices used, more than the limit 2");
}

// The names of an SVG's points: (x, y, text) of each <text class="name">, and its leader lines.
struct Shown {
  double x, y;
  std::string text;
};
std::vector<Shown> names_in(const std::string& svg) {
  std::vector<Shown> out;
  const std::regex re(R"re(<text x="([0-9.]+)" y="([0-9.]+)" class="name">([^<]*)</text>)re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator();
       ++it) {
    out.push_back({std::stod((*it)[1]), std::stod((*it)[2]), (*it)[3]});
  }
  return out;
}

TEST(FrontPlot, NamesOfCrowdedPointsDoNotOverlap) {
  // A dozen plans within a hair of each other on both axes, and two far apart: the crowd's names
  // must spread out (with leader lines), each drawn once.
  ParetoArchive a({Objective::kTime, Objective::kMemory}, {});
  for (int i = 0; i < 12; ++i) {
    offer(a, fmt::format("c{}", i), cv(1.0 + 0.001 * i, 1000 - i));
  }
  offer(a, "far1", cv(2.0, 500));
  offer(a, "far2", cv(0.5, 2000));
  ASSERT_EQ(a.front().size(), 14u);
  const std::string svg = front_svg(a, "crowd");
  const std::vector<Shown> shown = names_in(svg);
  ASSERT_EQ(shown.size(), 14u);
  std::set<std::string> texts;
  for (const Shown& n : shown) texts.insert(n.text);
  EXPECT_EQ(texts.size(), 14u);  // p0 … p13, each once
  // Boxes as front_plot sizes them (6.2 px a character, 12 px high; the baseline 2 px above the
  // box's bottom).
  for (std::size_t i = 0; i < shown.size(); ++i) {
    for (std::size_t j = i + 1; j < shown.size(); ++j) {
      const Shown& p = shown[i];
      const Shown& q = shown[j];
      const double pw = 6.2 * static_cast<double>(p.text.size()) + 2;
      const double qw = 6.2 * static_cast<double>(q.text.size()) + 2;
      const bool apart = p.x + pw <= q.x + 1e-6 || q.x + qw <= p.x + 1e-6 || p.y + 2 <= q.y - 10 ||
                         q.y + 2 <= p.y - 10;
      EXPECT_TRUE(apart) << p.text << " at " << p.x << "," << p.y << " and " << q.text << " at "
                         << q.x << "," << q.y;
    }
  }
  EXPECT_NE(svg.find("class=\"leader\""), std::string::npos);
  // Two points far apart need no leader.
  ParetoArchive b({Objective::kTime, Objective::kMemory}, {});
  offer(b, "x", cv(1, 2000));
  offer(b, "y", cv(2, 1000));
  EXPECT_EQ(front_svg(b, "two").find("class=\"leader\""), std::string::npos);
}

}  // namespace
}  // namespace tapestry::search
