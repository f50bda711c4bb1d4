// explain()'s critical path: the elements (applications, point-to-point transfers, collectives)
// that end last, walked back through what each waited for (explain.h).
#include <algorithm>
#include <optional>
#include <tuple>

#include "explain_detail.h"

namespace tapestry::cost::detail {

namespace {

// The elements of a schedule the critical path walks: applications, point-to-point transfers and
// collectives (a collective's transfers are one element).
struct Element {
  enum Kind : std::uint8_t { kApplication, kTransfer, kCollective } kind = kApplication;
  std::uint32_t index = 0;
  friend bool operator==(const Element&, const Element&) = default;
};

}  // namespace

CriticalPath critical_path_of(const Placement& p, const Schedule& s, const Target& target) {
  CriticalPath path;
  const auto interval = [&](Element e) -> Schedule::Interval {
    switch (e.kind) {
      case Element::kApplication:
        return s.applications[e.index];
      case Element::kTransfer:
        return s.transfers[e.index];
      case Element::kCollective:
        return s.collectives[e.index];
    }
    return {};
  };
  const auto of_transfer = [&](std::uint32_t t) {
    const std::uint32_t c = p.transfers[t].collective;
    return c == kNoCollective ? Element{Element::kTransfer, t} : Element{Element::kCollective, c};
  };
  // Ports: a point-to-point transfer holds the sender's egress and the receiver's ingress of its
  // class; a collective both directions of every participant's classes (intra, and inter when
  // it spans nodes).
  const auto node = [&](std::uint32_t d) {
    return d == kHost ? ~0u : static_cast<std::uint32_t>(target.devices[d].node);
  };
  const auto class_of = [&](const Transfer& x) {
    if (x.from == kHost || x.to == kHost) return 2;
    return node(x.from) != node(x.to) ? 1 : 0;
  };
  std::vector<std::vector<bool>> member(p.collectives.size());
  std::vector<int> classes(p.collectives.size(), 1);
  for (std::size_t c = 0; c < p.collectives.size(); ++c) {
    member[c].assign(target.devices.size(), false);
    for (std::uint32_t d : p.collectives[c].devices) member[c][d] = true;
    classes[c] = spans_nodes(p.collectives[c], target) ? 2 : 1;
  }
  const auto in = [&](std::size_t c, std::uint32_t d) { return d != kHost && member[c][d]; };
  const auto share_port = [&](Element a, Element b) {
    if (a.kind == Element::kTransfer && b.kind == Element::kTransfer) {
      const Transfer &x = p.transfers[a.index], &y = p.transfers[b.index];
      if (class_of(x) != class_of(y)) return false;
      return (x.from != kHost && x.from == y.from) || (x.to != kHost && x.to == y.to);
    }
    if (a.kind == Element::kTransfer) std::swap(a, b);  // a is the collective
    if (b.kind == Element::kTransfer) {
      const Transfer& y = p.transfers[b.index];
      return class_of(y) < classes[a.index] && (in(a.index, y.from) || in(a.index, y.to));
    }
    for (std::uint32_t d : p.collectives[b.index].devices) {
      if (member[a.index][d]) return true;
    }
    return false;
  };
  // What can delay an element, by device, in index order: the applications each device ran, and
  // the point-to-point transfers and the collectives whose ports are on it (a scan of every
  // element per step of the path took 80% of `tapestry cost` on 64-way plans of a 24-layer step).
  std::vector<std::vector<std::uint32_t>> apps_on(target.devices.size());
  std::vector<std::vector<std::uint32_t>> transfers_at(target.devices.size());
  std::vector<std::vector<std::uint32_t>> collectives_at(target.devices.size());
  for (std::uint32_t q = 0; q < s.applications.size(); ++q) apps_on[s.devices[q]].push_back(q);
  for (std::uint32_t t = 0; t < p.transfers.size(); ++t) {
    const Transfer& x = p.transfers[t];
    if (x.collective != kNoCollective) continue;
    if (x.from != kHost) transfers_at[x.from].push_back(t);
    if (x.to != kHost && x.to != x.from) transfers_at[x.to].push_back(t);
  }
  for (std::uint32_t c = 0; c < p.collectives.size(); ++c) {
    for (std::uint32_t d : p.collectives[c].devices) collectives_at[d].push_back(c);
  }
  // The element that ends last.
  std::optional<Element> at;
  double end = -1;
  const auto latest = [&](Element e) {
    if (interval(e).end > end) std::tie(end, at) = std::tuple(interval(e).end, e);
  };
  for (std::uint32_t a = 0; a < s.applications.size(); ++a) latest({Element::kApplication, a});
  for (std::uint32_t t = 0; t < s.transfers.size(); ++t) {
    if (p.transfers[t].collective == kNoCollective) latest({Element::kTransfer, t});
  }
  for (std::uint32_t c = 0; c < p.collectives.size(); ++c) latest({Element::kCollective, c});
  if (!at) return path;
  for (std::size_t guard = 0; guard < s.applications.size() + s.transfers.size() + 1; ++guard) {
    const Element e = *at;
    const Schedule::Interval iv = interval(e);
    switch (e.kind) {
      case Element::kApplication:
        path.compute_s += iv.end - iv.start;
        ++path.applications;
        break;
      case Element::kTransfer:
        path.communication_s += iv.end - iv.start;
        ++path.transfers;
        break;
      case Element::kCollective:
        path.communication_s += iv.end - iv.start;
        ++path.collectives;
        break;
    }
    if (iv.start <= 0) break;
    // What it waited for: an element ending exactly at its start (times are copied by max, so
    // equality is exact); otherwise the latest dependency, the gap counted as waiting.
    std::optional<Element> cause;
    double last = -1;
    Element last_cause;
    const auto consider = [&](Element x) {
      if (x == e) return;
      const double x_end = interval(x).end;
      if (x_end == iv.start && !cause) cause = x;
      if (x_end > last && x_end <= iv.start) std::tie(last, last_cause) = std::tuple(x_end, x);
    };
    // Only an element on one of e's devices can share a port with it: those, in index order
    // (transfers, then collectives, as a scan of every one would consider them).
    const auto consider_ports = [&] {
      std::vector<std::uint32_t> ts;
      std::vector<std::uint32_t> cs;
      const auto gather = [&](std::uint32_t d) {
        if (d == kHost) return;
        ts.insert(ts.end(), transfers_at[d].begin(), transfers_at[d].end());
        cs.insert(cs.end(), collectives_at[d].begin(), collectives_at[d].end());
      };
      if (e.kind == Element::kTransfer) {
        gather(p.transfers[e.index].from);
        gather(p.transfers[e.index].to);
      } else {
        for (std::uint32_t d : p.collectives[e.index].devices) gather(d);
      }
      for (std::vector<std::uint32_t>* v : {&ts, &cs}) {
        std::sort(v->begin(), v->end());
        v->erase(std::unique(v->begin(), v->end()), v->end());
      }
      for (std::uint32_t t : ts) {
        const Element x{Element::kTransfer, t};
        if (share_port(e, x)) consider(x);
      }
      for (std::uint32_t c : cs) {
        const Element x{Element::kCollective, c};
        if (!(x == e) && share_port(e, x)) consider(x);
      }
    };
    switch (e.kind) {
      case Element::kApplication: {
        const PlacedApplication& app = p.applications[e.index];
        for (std::uint32_t t : app.incoming) consider(of_transfer(t));
        for (std::uint32_t q : app.local_producers) consider({Element::kApplication, q});
        for (std::uint32_t q : app.ordering_predecessors) consider({Element::kApplication, q});
        for (std::uint32_t q : apps_on[s.devices[e.index]]) {
          if (q != e.index) consider({Element::kApplication, q});
        }
        break;
      }
      case Element::kTransfer: {
        const Transfer& tr = p.transfers[e.index];
        if (tr.producer != kHost) consider({Element::kApplication, tr.producer});
        consider_ports();
        break;
      }
      case Element::kCollective:
        for (std::uint32_t t : p.collectives[e.index].transfers) {
          consider({Element::kApplication, p.transfers[t].producer});
        }
        consider_ports();
        break;
    }
    if (!cause) {
      if (last < 0) {
        path.waiting_s += iv.start;
        break;
      }
      path.waiting_s += iv.start - last;
      cause = last_cause;
    }
    at = cause;
  }
  const double top = std::max({path.compute_s, path.communication_s, path.waiting_s});
  path.bound = top == path.compute_s         ? "compute"
               : top == path.communication_s ? "communication"
                                             : "waiting";
  return path;
}

}  // namespace tapestry::cost::detail
