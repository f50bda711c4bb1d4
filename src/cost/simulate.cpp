// simulate(): event-driven list scheduling of a placement on a target (simulate.h).
//
// Events, in time order (ties: the order they were created): an application finishing frees its
// device, releases its local consumers and sends its outgoing transfers (each reserving the
// sender's egress and the receiver's ingress port) — or, for a transfer of a collective, counts
// the collective's producers down and starts it after the last (reserving every participant's
// ports); a transfer arriving releases its consumers.
// A device that is free starts the released application that was released first (ties:
// topological position) — on a target of one device, the released application first in graph
// order, as the block executor runs a program on one thread (runtime/block_program.h's order):
// a device alone does the same work in any order, and the order decides its peak memory. On a
// target of several CPUs that share no memory — MPI ranks — each device runs its applications in
// the program's order (a topological order of every dependency, ties in graph order — the order
// the MPI executor's ranks start their tasks in), the next once it is released, and not while a
// box it has sent waits for a reader placed before that application; a point-to-point box is then
// held by its receiver from its first reader's start and by its sender until then. GPUs keep the
// released application first: a GPU runs what its streams make ready, in no program order. Memory
// is a sweep over allocation/free instants per device. On a shared-memory node the devices after
// the node's first join at the target's worker_start_s (a "join" event frees them).
#include "tapestry/cost/simulate.h"

#include <algorithm>
#include <cmath>
#include <compare>
#include <optional>
#include <queue>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "tapestry/cost/work.h"
#include "tapestry/support/assert.h"
#include "tapestry/support/cancel.h"
#include "tapestry/support/error.h"

namespace tapestry::cost {

namespace {

enum class Port : std::uint8_t { kIntra, kInter, kHost };

enum class EventKind : std::uint8_t { kFinish, kArrive, kJoin };

struct Event {
  double time;
  std::uint64_t sequence;
  EventKind kind;
  std::uint32_t id;  // an application, a transfer or a device
  friend bool operator>(const Event& a, const Event& b) {
    return std::tie(a.time, a.sequence) > std::tie(b.time, b.sequence);
  }
};

struct Released {
  double time;  // the key (Simulation::release): when released, or the graph position
  std::uint32_t app;
  friend bool operator>(const Released& a, const Released& b) {
    return std::tie(a.time, a.app) > std::tie(b.time, b.app);
  }
};

// A change of one device's live memory; sorted, each device's by time, frees before allocations
// at one instant.
struct MemoryEvent {
  std::size_t device;
  double time;
  std::int64_t delta;
  friend auto operator<=>(const MemoryEvent&, const MemoryEvent&) = default;
};

template <typename T>
using MinHeap = std::priority_queue<T, std::vector<T>, std::greater<T>>;

class Simulation {
 public:
  Simulation(const Placement& placement, const Target& target)
      : p_(placement), target_(target), n_devices_(target.devices.size()) {
    const std::size_t n = p_.applications.size();
    n_types_ = target.device_types.size();
    rates_.resize(p_.operations.size() * n_types_);
    bool streams = false;
    for (const DeviceType& d : target.device_types) streams = streams || d.streams > 1;
    std::vector<std::uint32_t> on_device(streams ? n_devices_ : 0);
    std::vector<double> together(n_types_, 1.0);
    for (std::size_t op = 0; op < p_.operations.size(); ++op) {
      if (op % 256 == 0) support::check_cancelled();
      // A device with streams runs an operation's applications placed on it together
      // (target.h): the most of them on one device of each type.
      if (streams) {
        together.assign(n_types_, 1.0);
        for (std::uint32_t a : p_.operations[op].applications) {
          const std::uint32_t d = p_.applications[a].device;
          const std::size_t type = target.devices[d].type;
          together[type] = std::max(together[type], static_cast<double>(++on_device[d]));
        }
        for (std::uint32_t a : p_.operations[op].applications) {
          on_device[p_.applications[a].device] = 0;
        }
      }
      for (std::size_t type = 0; type < n_types_; ++type) {
        OperationRates& r = rates_[op * n_types_ + type];
        r = operation_rates(p_.operations[op], target.device_types[type]);
        r.gemm_concurrency =
            std::min(together[type], static_cast<double>(target.device_types[type].streams));
      }
    }
    pending_.resize(n);
    ready_.assign(n, 0.0);
    app_time_.resize(n);
    transfer_time_.resize(p_.transfers.size());
    last_read_.assign(n, 0.0);
    transfer_last_read_.assign(p_.transfers.size(), 0.0);
    // Local consumers and outgoing transfers per application, as CSR arrays (in the order the
    // applications and transfers list them).
    local_begin_.assign(n + 1, 0);
    outgoing_begin_.assign(n + 1, 0);
    for (std::uint32_t a = 0; a < n; ++a) {
      const PlacedApplication& app = p_.applications[a];
      pending_[a] = static_cast<std::uint32_t>(
          app.local_producers.size() + app.ordering_predecessors.size() + app.incoming.size());
      for (std::uint32_t producer : app.local_producers) ++local_begin_[producer + 1];
      for (std::uint32_t before : app.ordering_predecessors) ++local_begin_[before + 1];
    }
    for (const Transfer& t : p_.transfers) {
      if (t.producer != kHost) ++outgoing_begin_[t.producer + 1];
    }
    // Collectives: priced once; each waits for its distinct producers.
    const std::size_t nc = p_.collectives.size();
    prices_.resize(nc);
    spans_.resize(nc);
    collective_pending_.assign(nc, 0);
    collective_seen_.assign(nc, kHost);
    collective_time_.resize(nc);
    std::vector<std::uint32_t> counted(nc > 0 ? n : 0, kNoCollective);  // per producer: the last
    for (std::uint32_t c = 0; c < nc; ++c) {                            // collective counted
      if (c % 256 == 0) support::check_cancelled();
      prices_[c] = price_collective(p_.collectives[c], target);
      spans_[c] = spans_nodes(p_.collectives[c], target);
      for (std::uint32_t t : p_.collectives[c].transfers) {
        const std::uint32_t producer = p_.transfers[t].producer;
        if (counted[producer] != c) ++collective_pending_[c];
        counted[producer] = c;
      }
    }
    for (std::size_t a = 0; a < n; ++a) {
      local_begin_[a + 1] += local_begin_[a];
      outgoing_begin_[a + 1] += outgoing_begin_[a];
    }
    local_consumers_.resize(local_begin_[n]);
    outgoing_.resize(outgoing_begin_[n]);
    std::vector<std::uint32_t> at(local_begin_.begin(), local_begin_.end() - 1);
    for (std::uint32_t a = 0; a < n; ++a) {
      for (std::uint32_t producer : p_.applications[a].local_producers) {
        local_consumers_[at[producer]++] = a;
      }
      for (std::uint32_t before : p_.applications[a].ordering_predecessors) {
        local_consumers_[at[before]++] = a;
      }
    }
    at.assign(outgoing_begin_.begin(), outgoing_begin_.end() - 1);
    for (std::uint32_t t = 0; t < p_.transfers.size(); ++t) {
      if (p_.transfers[t].producer != kHost) outgoing_[at[p_.transfers[t].producer]++] = t;
    }
    scheduled_.assign(n, false);
    device_free_.assign(n_devices_, true);
    queues_.resize(n_devices_);
    node_queues_.resize(target.node_count);
    ran_on_.assign(n, 0);
    node_devices_.resize(target.node_count);
    for (const Device& d : target.devices) node_devices_[d.node].push_back(d.index);
    for (auto& ports : egress_) ports.assign(n_devices_, 0.0);
    for (auto& ports : ingress_) ports.assign(n_devices_, 0.0);
    // CPUs that share no memory run their applications in the program's order (the file
    // comment): Kahn's algorithm over every dependency, ties in graph order — the order the
    // executors run the whole program in — then each device's applications in it.
    in_order_ = n_devices_ > 1 && !target.intra_node.shared_memory &&
                std::all_of(target.devices.begin(), target.devices.end(), [&](const Device& d) {
                  return target.device_types[d.type].kind == "cpu";
                });
    if (in_order_) {
      std::vector<std::uint32_t> waiting(n, 0);
      std::vector<std::uint32_t> after_begin(n + 1, 0);
      // A collective's readers wait for every one of its producers (it starts after the last).
      std::vector<std::vector<std::uint32_t>> collective_producers(p_.collectives.size());
      for (std::uint32_t c = 0; c < p_.collectives.size(); ++c) {
        for (std::uint32_t t : p_.collectives[c].transfers) {
          const std::uint32_t q = p_.transfers[t].producer;
          if (q != kHost) collective_producers[c].push_back(q);
        }
        std::sort(collective_producers[c].begin(), collective_producers[c].end());
        collective_producers[c].erase(
            std::unique(collective_producers[c].begin(), collective_producers[c].end()),
            collective_producers[c].end());
      }
      const auto each_before = [&](std::uint32_t a, auto&& f) {
        const PlacedApplication& app = p_.applications[a];
        for (std::uint32_t q : app.local_producers) f(q);
        for (std::uint32_t q : app.ordering_predecessors) f(q);
        std::uint32_t seen = kNoCollective;
        for (std::uint32_t t : app.incoming) {
          const Transfer& tr = p_.transfers[t];
          if (tr.collective == kNoCollective) {
            if (tr.producer != kHost) f(tr.producer);
          } else if (tr.collective != seen) {  // a repeat would count and release alike
            seen = tr.collective;
            for (std::uint32_t q : collective_producers[tr.collective]) f(q);
          }
        }
      };
      for (std::uint32_t a = 0; a < n; ++a) {
        each_before(a, [&](std::uint32_t q) {
          ++after_begin[q + 1];
          ++waiting[a];
        });
      }
      for (std::size_t a = 0; a < n; ++a) after_begin[a + 1] += after_begin[a];
      std::vector<std::uint32_t> after(after_begin[n]);
      std::vector<std::uint32_t> fill(after_begin.begin(), after_begin.end() - 1);
      for (std::uint32_t a = 0; a < n; ++a) {
        each_before(a, [&](std::uint32_t q) { after[fill[q]++] = a; });
      }
      MinHeap<std::pair<std::uint64_t, std::uint32_t>> ready;
      for (std::uint32_t a = 0; a < n; ++a) {
        if (waiting[a] == 0) ready.push({p_.applications[a].id.index(), a});
      }
      device_order_.resize(n_devices_);
      position_.assign(n, 0);
      std::uint32_t next_position = 0;
      while (!ready.empty()) {
        const std::uint32_t a = ready.top().second;
        ready.pop();
        position_[a] = next_position++;
        device_order_[p_.applications[a].device].push_back(a);
        for (std::uint32_t k = after_begin[a]; k < after_begin[a + 1]; ++k) {
          if (--waiting[after[k]] == 0)
            ready.push({p_.applications[after[k]].id.index(), after[k]});
        }
      }
      device_next_.assign(n_devices_, 0);
      released_.assign(n, false);
      // Where each point-to-point box is taken: its first reader's place in the order.
      taken_at_.assign(p_.transfers.size(), kNotHeld);
      for (std::uint32_t t = 0; t < p_.transfers.size(); ++t) {
        const Transfer& tr = p_.transfers[t];
        if (tr.collective != kNoCollective || tr.producer == kHost || tr.to == kHost) continue;
        for (std::uint32_t reader : tr.consumers) {
          taken_at_[t] = std::min(taken_at_[t], position_[reader]);
        }
      }
      held_.resize(n_devices_);
    }
  }

  void run() {
    // Host loads start at once, in placement order.
    for (std::uint32_t t = 0; t < p_.transfers.size(); ++t) {
      if (p_.transfers[t].producer == kHost) send(t, 0.0);
    }
    for (std::uint32_t a = 0; a < p_.applications.size(); ++a) {
      if (pending_[a] == 0) release(a, 0.0);
    }
    if (target_.worker_start_s > 0 && target_.intra_node.shared_memory) {
      for (const std::vector<std::size_t>& devices : node_devices_) {
        for (std::size_t k = 1; k < devices.size(); ++k) {
          device_free_[devices[k]] = false;
          push(target_.worker_start_s, EventKind::kJoin, static_cast<std::uint32_t>(devices[k]));
        }
      }
    }
    for (std::size_t d = 0; d < n_devices_; ++d) dispatch(d, 0.0);
    support::check_cancelled();
    for (std::uint32_t handled = 0; !events_.empty(); ++handled) {
      if (handled % 1024 == 0) support::check_cancelled();  // a 64-way step: ~10^6 events
      const Event e = events_.top();
      events_.pop();
      switch (e.kind) {
        case EventKind::kArrive:
          arrive(e.id, e.time);
          break;
        case EventKind::kFinish:
          finish(e.id, e.time);
          break;
        case EventKind::kJoin:
          device_free_[e.id] = true;
          dispatch(e.id, e.time);
          break;
      }
    }
    // An application that never ran waits, through the ordering edges (ir/ordering.h), the
    // dependencies and the collectives, on itself: the plan's schedule deadlocks. A plan error
    // (the search refuses it with this reason), not an internal one.
    std::uint32_t stuck = 0;
    std::optional<std::uint32_t> first;
    for (std::uint32_t a = 0; a < p_.applications.size(); ++a) {
      if (pending_[a] == 0 && scheduled_[a]) continue;
      ++stuck;
      if (!first) first = a;
    }
    if (first) {
      throw Error(fmt::format(
          "simulate: the plan's schedule deadlocks: {} of {} applications never run, the first "
          "of operation {} (its ordering edges, dependencies and collectives wait on one another)",
          stuck, p_.applications.size(), p_.operations[p_.applications[*first].operation].name));
    }
  }

  CostVector cost() const;
  std::vector<double> link_energy() const;
  Schedule schedule() const { return {app_time_, ran_on_, transfer_time_, collective_time_}; }

 private:
  static Port port_of(const Target& target, std::uint32_t from, std::uint32_t to) {
    if (from == kHost || to == kHost) return Port::kHost;
    return target.devices[from].node == target.devices[to].node ? Port::kIntra : Port::kInter;
  }

  const Link& link_of(const Transfer& t) const {
    if (t.from == kHost || t.to == kHost) {
      TAPESTRY_ASSERT(target_.host.has_value(), "host transfers need a host link");
      return *target_.host;
    }
    return target_.link_between(t.from, t.to);
  }

  void push(double time, EventKind kind, std::uint32_t id) {
    events_.push(Event{time, sequence_++, kind, id});
  }

  // An unpinned application on a shared-memory node may run on any of the node's devices.
  bool floats(std::uint32_t a) const {
    return !p_.applications[a].pinned && target_.intra_node.shared_memory;
  }

  void release(std::uint32_t a, double time) {
    const std::uint32_t device = p_.applications[a].device;
    if (in_order_) {
      released_[a] = true;
      return;
    }
    // The queues' key (the file comment): when released, or on one device the graph position.
    const double key = n_devices_ == 1 ? static_cast<double>(p_.applications[a].id.index()) : time;
    if (floats(a)) {
      node_queues_[target_.devices[device].node].push(Released{key, a});
    } else {
      queues_[device].push(Released{key, a});
    }
  }

  // Starts work on every free device that can take `a` (its device, or its node's devices).
  void dispatch_for(std::uint32_t a, double now) {
    const std::uint32_t device = p_.applications[a].device;
    if (!floats(a)) {
      dispatch(device, now);
      return;
    }
    for (std::size_t d : node_devices_[target_.devices[device].node]) dispatch(d, now);
  }

  void dispatch(std::size_t device, double now) {
    if (!device_free_[device]) return;
    if (in_order_) {  // the next application in the order, once released and not held back
      if (device_next_[device] == device_order_[device].size()) return;
      const std::uint32_t a = device_order_[device][device_next_[device]];
      if (!released_[a]) return;
      if (!held_[device].empty() && *held_[device].begin() < position_[a]) return;
      ++device_next_[device];
      start(device, a, now);
      return;
    }
    MinHeap<Released>& own = queues_[device];
    MinHeap<Released>& shared = node_queues_[target_.devices[device].node];
    MinHeap<Released>* from = nullptr;
    if (!own.empty() && (shared.empty() || !(own.top() > shared.top()))) {
      from = &own;
    } else if (!shared.empty()) {
      from = &shared;
    }
    if (from == nullptr) return;
    const std::uint32_t a = from->top().app;
    from->pop();
    start(device, a, now);
  }

  void start(std::size_t device, std::uint32_t a, double now) {
    device_free_[device] = false;
    ran_on_[a] = static_cast<std::uint32_t>(device);
    const PlacedApplication& app = p_.applications[a];
    const std::size_t type = target_.devices[device].type;
    const double duration = application_seconds(app.work, target_.device_types[type],
                                                rates_[app.operation * n_types_ + type]);
    app_time_[a] = {now, now + duration};
    scheduled_[a] = true;
    push(now + duration, EventKind::kFinish, a);
    if (!in_order_) return;
    // Its first reader takes each box it receives now: the senders hold them no longer.
    for (std::uint32_t t : app.incoming) {
      if (taken_at_[t] != position_[a]) continue;
      const std::uint32_t from = p_.transfers[t].from;
      held_[from].erase(held_[from].find(taken_at_[t]));
      dispatch(from, now);
    }
  }

  // Starts collective c once its last producer has finished: when every participant's ports of
  // the classes it uses are free, holding them all (both directions) until it ends; all its
  // transfers arrive at its end.
  void start_collective(std::uint32_t c, double now) {
    const Collective& col = p_.collectives[c];
    const int classes = spans_[c] ? 2 : 1;  // kIntra, then kInter
    double start = now;
    for (std::uint32_t d : col.devices) {
      for (int k = 0; k < classes; ++k) start = std::max({start, egress_[k][d], ingress_[k][d]});
    }
    const double end = start + prices_[c].seconds;
    for (std::uint32_t d : col.devices) {
      for (int k = 0; k < classes; ++k) egress_[k][d] = ingress_[k][d] = end;
    }
    collective_time_[c] = {start, end};
    for (std::uint32_t t : col.transfers) {
      const Transfer& tr = p_.transfers[t];
      transfer_time_[t] = {start, end};
      last_read_[tr.producer] = std::max(last_read_[tr.producer], end);
      push(end, EventKind::kArrive, t);
    }
  }

  void send(std::uint32_t t, double now) {
    const Transfer& tr = p_.transfers[t];
    const Port port = port_of(target_, tr.from, tr.to);
    auto& out = egress_[static_cast<int>(port)];
    auto& in = ingress_[static_cast<int>(port)];
    double start = now;
    if (tr.from != kHost) start = std::max(start, out[tr.from]);
    if (tr.to != kHost) start = std::max(start, in[tr.to]);
    const double end = start + transfer_seconds(tr.bytes, link_of(tr));
    if (tr.from != kHost) out[tr.from] = end;
    if (tr.to != kHost) in[tr.to] = end;
    transfer_time_[t] = {start, end};
    if (tr.producer != kHost) last_read_[tr.producer] = std::max(last_read_[tr.producer], end);
    push(end, EventKind::kArrive, t);
  }

  void finish(std::uint32_t a, double now) {
    const std::size_t device = ran_on_[a];
    device_free_[device] = true;
    for (std::uint32_t producer : p_.applications[a].local_producers) {
      last_read_[producer] = std::max(last_read_[producer], now);
    }
    for (std::uint32_t t : p_.applications[a].incoming) {
      transfer_last_read_[t] = std::max(transfer_last_read_[t], now);
    }
    for (std::uint32_t k = local_begin_[a]; k < local_begin_[a + 1]; ++k) {
      satisfy(local_consumers_[k], now);
    }
    for (std::uint32_t k = outgoing_begin_[a]; k < outgoing_begin_[a + 1]; ++k) {
      const std::uint32_t t = outgoing_[k];
      const std::uint32_t c = p_.transfers[t].collective;
      if (c == kNoCollective) {
        send(t, now);
        if (in_order_ && taken_at_[t] != kNotHeld) held_[device].insert(taken_at_[t]);
      } else if (collective_seen_[c] != a) {  // once per producer and collective
        collective_seen_[c] = a;
        if (--collective_pending_[c] == 0) start_collective(c, now);
      }
    }
    dispatch(device, now);
  }

  void arrive(std::uint32_t t, double now) {
    for (std::uint32_t c : p_.transfers[t].consumers) satisfy(c, now);
  }

  void satisfy(std::uint32_t a, double now) {
    ready_[a] = std::max(ready_[a], now);
    TAPESTRY_ASSERT(pending_[a] > 0, "a dependency is satisfied once");
    if (--pending_[a] == 0) {
      release(a, ready_[a]);
      dispatch_for(a, now);
    }
  }

  const Placement& p_;
  const Target& target_;
  std::size_t n_devices_;
  // CPUs that share no memory, more than one (in_order_: MPI ranks): each runs its applications in
  // device_order_, the next (device_next_) once released, and not while a box it has sent waits
  // for a reader placed before it in the order (held_: per device, taken_at_ of the boxes sent
  // and not yet taken), as the MPI executor's ranks do.
  static constexpr std::uint32_t kNotHeld = UINT32_MAX;
  bool in_order_ = false;
  std::vector<std::vector<std::uint32_t>> device_order_;
  std::vector<std::size_t> device_next_;
  std::vector<bool> released_;
  std::vector<std::uint32_t> position_;  // per application: its place in the order
  std::vector<std::uint32_t> taken_at_;  // per transfer: its first reader's position, or kNotHeld
  std::vector<std::multiset<std::uint32_t>> held_;
  std::size_t n_types_ = 0;
  std::vector<OperationRates> rates_;  // per operation, per device type
  std::vector<std::uint32_t> pending_;
  std::vector<double> ready_;
  // CSR by producer: its local consumers and the applications ordered after it.
  std::vector<std::uint32_t> local_begin_, local_consumers_;
  std::vector<std::uint32_t> outgoing_begin_, outgoing_;  // CSR by producer
  std::vector<Schedule::Interval> app_time_;
  std::vector<Schedule::Interval> transfer_time_;
  std::vector<double> last_read_;           // per application: its output's last reader ends
  std::vector<double> transfer_last_read_;  // per transfer: its last reader ends
  std::vector<bool> scheduled_;
  std::vector<bool> device_free_;
  std::vector<MinHeap<Released>> queues_;       // per device: pinned applications
  std::vector<MinHeap<Released>> node_queues_;  // per node: applications free to float
  std::vector<std::vector<std::size_t>> node_devices_;
  std::vector<std::uint32_t> ran_on_;
  std::vector<double> egress_[3];
  std::vector<double> ingress_[3];
  std::vector<CollectivePrice> prices_;            // per collective
  std::vector<bool> spans_;                        // per collective: it spans nodes
  std::vector<std::uint32_t> collective_pending_;  // per collective: producers not finished
  std::vector<std::uint32_t> collective_seen_;     // per collective: the last producer counted
  std::vector<Schedule::Interval> collective_time_;
  MinHeap<Event> events_;
  std::uint64_t sequence_ = 0;
};

CostVector Simulation::cost() const {
  CostVector c;
  double makespan = 0;
  for (const auto& t : app_time_) makespan = std::max(makespan, t.end);
  for (const auto& t : transfer_time_) makespan = std::max(makespan, t.end);
  makespan += target_.run_overhead_s;
  c.makespan_s = makespan;

  std::vector<DeviceCost> devices(n_devices_);
  std::vector<bool> used(n_devices_, false);
  std::vector<MemoryEvent> memory;
  memory.reserve(2 * (p_.applications.size() + p_.transfers.size()));
  // Where devices run in order (in_order_), a point-to-point box is taken by its receiver when
  // its first reader starts, as the MPI executor receives it at its reader's turn, and the
  // sender holds it until then (sent_until); elsewhere the receiver holds it from the transfer's
  // start.
  std::vector<double> taken(p_.transfers.size(), 0.0);
  std::vector<double> sent_until(p_.applications.size(), 0.0);
  for (std::uint32_t t = 0; t < p_.transfers.size(); ++t) {
    const Transfer& tr = p_.transfers[t];
    taken[t] = transfer_time_[t].start;
    if (!in_order_ || tr.collective != kNoCollective || tr.consumers.empty()) continue;
    taken[t] = makespan;
    for (std::uint32_t reader : tr.consumers) {
      taken[t] = std::min(taken[t], app_time_[reader].start);
    }
    if (tr.producer != kHost) {
      sent_until[tr.producer] = std::max(sent_until[tr.producer], taken[t]);
    }
  }
  const auto freed_at = [&](std::uint32_t a) {
    return p_.applications[a].writes_output
               ? makespan
               : std::max({app_time_[a].end, last_read_[a], sent_until[a]});
  };
  // A shared buffer (placement.h) from its first writer's start until the last of its writers'
  // outputs is freed; those bytes are not the writers' own.
  std::vector<std::int64_t> shared(p_.shared_buffers.empty() ? 0 : p_.applications.size(), 0);
  for (const SharedBuffer& b : p_.shared_buffers) {
    double start = app_time_[b.writers.front()].start;
    double freed = 0;
    std::int64_t bytes = 0;
    for (std::size_t i = 0; i < b.writers.size(); ++i) {
      start = std::min(start, app_time_[b.writers[i]].start);
      freed = std::max(freed, freed_at(b.writers[i]));
      bytes += b.bytes[i];
      shared[b.writers[i]] += b.bytes[i];
    }
    const std::size_t device = ran_on_[b.writers.front()];
    memory.push_back({device, start, bytes});
    memory.push_back({device, freed, -bytes});
  }
  for (std::uint32_t a = 0; a < p_.applications.size(); ++a) {
    const PlacedApplication& app = p_.applications[a];
    const std::uint32_t ran_on = ran_on_[a];
    DeviceCost& d = devices[ran_on];
    used[ran_on] = true;
    ++d.applications;
    d.compute_s += app_time_[a].end - app_time_[a].start;
    d.finish_s = std::max(d.finish_s, app_time_[a].end);
    const std::int64_t own = app.work.bytes_written - (shared.empty() ? 0 : shared[a]);
    memory.push_back({ran_on, app_time_[a].start, own});
    memory.push_back({ran_on, freed_at(a), -own});
  }
  // Transfers: bytes, port time and what receivers hold. A transfer of a collective adds no port
  // time of its own (the collective's is counted once per participant below), and one of a
  // reduce-scatter or reduce holds no memory of its own (its receiver's staging does).
  for (std::uint32_t t = 0; t < p_.transfers.size(); ++t) {
    const Transfer& tr = p_.transfers[t];
    const double seconds = transfer_time_[t].end - transfer_time_[t].start;
    const bool p2p = tr.collective == kNoCollective;
    c.bytes_moved += tr.bytes;
    if (tr.from != kHost) {
      devices[tr.from].bytes_sent += tr.bytes;
      if (p2p) devices[tr.from].comm_s += seconds;
    }
    if (tr.to != kHost) {
      devices[tr.to].bytes_received += tr.bytes;
      used[tr.to] = true;
      if (p2p) devices[tr.to].comm_s += seconds;
      if (p2p || prices_[tr.collective].staging_bytes == 0) {
        const double freed = tr.replicates_output
                                 ? makespan
                                 : std::max(transfer_time_[t].end, transfer_last_read_[t]);
        memory.push_back({tr.to, taken[t], tr.bytes});
        memory.push_back({tr.to, freed, -tr.bytes});
      }
    }
  }
  for (std::uint32_t k = 0; k < p_.collectives.size(); ++k) {
    const Collective& col = p_.collectives[k];
    const Schedule::Interval when = collective_time_[k];
    for (std::uint32_t d : col.devices) devices[d].comm_s += when.end - when.start;
    if (prices_[k].staging_bytes == 0) continue;
    // Each receiver holds one step's chunk until its last reader of the collective finishes.
    for (std::uint32_t d : col.devices) {
      double freed = -1;
      for (std::uint32_t t : col.transfers) {
        if (p_.transfers[t].to == d) {
          freed = std::max({freed, when.end, transfer_last_read_[t]});
        }
      }
      if (freed < 0) continue;  // a sender only
      memory.push_back({d, when.start, prices_[k].staging_bytes});
      memory.push_back({d, freed, -prices_[k].staging_bytes});
    }
  }
  const std::vector<double> link_j = link_energy();
  // Bucketed by device (a counting pass), each device's events sorted by time, frees before
  // allocations at the same instant: per-device sorts are shorter than one sort of them all.
  std::vector<std::uint32_t> first(n_devices_ + 1, 0);
  for (const MemoryEvent& e : memory) ++first[e.device + 1];
  for (std::size_t dev = 0; dev < n_devices_; ++dev) first[dev + 1] += first[dev];
  std::vector<MemoryEvent> by_device(memory.size());
  {
    std::vector<std::uint32_t> at(first.begin(), first.end() - 1);
    for (const MemoryEvent& e : memory) by_device[at[e.device]++] = e;
  }
  // A plan holds every device of every node on which it uses one.
  std::vector<bool> node_held(target_.node_count, false);
  for (std::size_t dev = 0; dev < n_devices_; ++dev) {
    if (used[dev]) node_held[target_.devices[dev].node] = true;
  }
  for (std::size_t dev = 0; dev < n_devices_; ++dev) {
    const DeviceType& type = target_.type_of(dev);
    if (node_held[target_.devices[dev].node]) {
      ++c.devices_held;
      c.idle_energy_j += type.idle_w * makespan;
    }
    if (!used[dev]) {
      if (node_held[target_.devices[dev].node]) c.energy_j += type.idle_w * makespan;
      continue;
    }
    std::int64_t live = p_.resident_input_bytes[dev];
    std::int64_t peak = live;
    const auto begin = by_device.begin() + first[dev];
    const auto end = by_device.begin() + first[dev + 1];
    std::sort(begin, end, [](const MemoryEvent& a, const MemoryEvent& b) {
      if (a.time != b.time) return a.time < b.time;
      return a.delta < b.delta;
    });
    for (auto event = begin; event != end; ++event) {
      live += event->delta;
      peak = std::max(peak, live);
    }
    DeviceCost& d = devices[dev];
    d.device = target_.devices[dev].name;
    d.peak_memory_bytes = peak;
    d.idle_s = std::max(0.0, makespan - d.compute_s);
    d.energy_j = type.idle_w * makespan + (type.busy_w - type.idle_w) * d.compute_s +
                 (link_j.empty() ? 0.0 : link_j[dev]);
    c.energy_j += d.energy_j;
    c.peak_memory_bytes = std::max(c.peak_memory_bytes, peak);
    if (peak > type.memory_bytes) c.fits = false;
    ++c.devices_used;
    c.per_device.push_back(std::move(d));
  }
  return c;
}

// Per device: the energy its ports draw — each port (a device's end of one link class) draws
// power_w over the union of the intervals it sends or receives. Empty when no link draws power.
std::vector<double> Simulation::link_energy() const {
  const Link* links[3] = {&target_.intra_node, target_.inter_node ? &*target_.inter_node : nullptr,
                          target_.host ? &*target_.host : nullptr};
  if (std::none_of(std::begin(links), std::end(links),
                   [](const Link* l) { return l != nullptr && l->power_w > 0; })) {
    return {};  // no link draws power: none to add
  }
  std::vector<double> joules(n_devices_, 0.0);
  struct Busy {
    std::size_t port;  // device · 3 + class
    double start, end;
    bool operator<(const Busy& o) const {
      return std::tie(port, start, end) < std::tie(o.port, o.start, o.end);
    }
  };
  std::vector<Busy> busy;
  for (std::uint32_t t = 0; t < p_.transfers.size(); ++t) {
    const Transfer& tr = p_.transfers[t];
    if (tr.collective != kNoCollective) continue;
    const auto k = static_cast<std::size_t>(port_of(target_, tr.from, tr.to));
    const Schedule::Interval when = transfer_time_[t];
    if (tr.from != kHost) busy.push_back({std::size_t{tr.from} * 3 + k, when.start, when.end});
    if (tr.to != kHost) busy.push_back({std::size_t{tr.to} * 3 + k, when.start, when.end});
  }
  for (std::uint32_t c = 0; c < p_.collectives.size(); ++c) {
    for (std::uint32_t d : p_.collectives[c].devices) {
      for (std::size_t k = 0; k < (spans_[c] ? 2u : 1u); ++k) {
        busy.push_back(
            {std::size_t{d} * 3 + k, collective_time_[c].start, collective_time_[c].end});
      }
    }
  }
  std::sort(busy.begin(), busy.end());
  for (std::size_t i = 0; i < busy.size();) {
    const std::size_t port = busy[i].port;
    const Link* link = links[port % 3];
    double covered = 0, start = busy[i].start, end = busy[i].end;
    for (; i < busy.size() && busy[i].port == port; ++i) {
      if (busy[i].start > end) {
        covered += end - start;
        start = busy[i].start;
      }
      end = std::max(end, busy[i].end);
    }
    covered += end - start;
    joules[port / 3] += link->power_w * covered;
  }
  return joules;
}

}  // namespace

OperationRates operation_rates(const PlacedOperation& op, const DeviceType& device) {
  OperationRates r{device.efficiency, device.bandwidth_efficiency_of(op.kernel), device.efficiency};
  if (device.fused_passes && op.kernels.size() > 1) {
    // Each stage after the first, a pass over its elements — but relu right after a GEMM, which
    // is the GEMM's epilogue.
    for (std::size_t i = 1; i < op.kernels.size(); ++i) {
      std::string_view kernel = op.kernels[i].kernel;
      if (kernel.starts_with("op:")) kernel.remove_prefix(3);
      if (kernel == "relu" && is_gemm_kernel(op.kernels[i - 1].kernel)) continue;
      const double per_point = flops_per_point(kernel);
      if (per_point <= 0) continue;
      r.extra_passes += 1;
      r.pass_elements_per_flop += op.kernels[i].share / per_point;
    }
  }
  if (!device.gemm_efficiency.empty()) {
    // e_rest: the stages outside GEMMs, harmonically by their shares.
    double inverse = 0, share = 0;
    for (const KernelShare& k : op.kernels) {
      if (is_gemm_kernel(k.kernel)) continue;
      inverse += k.share / device.efficiency_of(k.kernel);
      share += k.share;
    }
    if (share > 0) r.other_efficiency = share / inverse;
  }
  if (op.kernels.empty() || device.kernels.empty()) return r;
  double inverse = 0;
  double bandwidth = 1.0;
  for (const KernelShare& k : op.kernels) {
    inverse += k.share / device.efficiency_of(k.kernel);
    bandwidth = std::min(bandwidth, device.bandwidth_efficiency_of(k.kernel));
  }
  r.efficiency = 1.0 / inverse;
  if (op.kernels.size() > 1 || op.kernels.front().kernel != op.kernel) {
    r.bandwidth_efficiency = std::min(r.bandwidth_efficiency, bandwidth);
  }
  return r;
}

double application_seconds(const Work& work, const DeviceType& device) {
  return application_seconds(work, device,
                             {device.efficiency, device.bandwidth_efficiency, device.efficiency});
}

double application_seconds(const Work& work, const DeviceType& device,
                           const OperationRates& rates) {
  double compute = 0;
  if (work.flops > 0) {
    auto peak = device.peak_flops.find(work.dtype);
    // Integer and boolean arithmetic (index math, masks, gathered positions) runs at about the
    // float32 rate of vector units, and no preset measures it: the float32 peak unless the
    // target gives the dtype its own.
    if (peak == device.peak_flops.end() && !ir::is_float(work.dtype)) {
      peak = device.peak_flops.find(ir::DType::kFloat32);
    }
    if (peak == device.peak_flops.end()) {
      throw Error(fmt::format("device type '{}' has no peak_flops for {}", device.name,
                              ir::dtype_name(work.dtype)));
    }
    // The dtype's factor (target.h "dtypes") applies to the FLOPs outside GEMMs only.
    const double other = device.dtype_efficiency(work.dtype);
    if (work.gemm_flops > 0 && !device.gemm_efficiency.empty()) {
      const double e =
          device.gemm_efficiency_at(work.gemm_flops * rates.gemm_concurrency, work.dtype);
      compute = work.gemm_flops / (peak->second * e) +
                std::max(0.0, work.flops - work.gemm_flops) /
                    (peak->second * rates.other_efficiency * other);
    } else if (other == 1.0) {
      compute = work.flops / (peak->second * rates.efficiency);
    } else {
      const double gemm = std::min(work.gemm_flops, work.flops);
      compute = gemm / (peak->second * rates.efficiency) +
                (work.flops - gemm) / (peak->second * rates.efficiency * other);
    }
  }
  const std::int64_t moved = work.bytes_read + work.bytes_written;
  const double bandwidth = device.cache_bytes > 0 && moved <= device.cache_bytes
                               ? device.cache_bandwidth_Bps
                               : device.memory_bandwidth_Bps;
  const double memory =
      static_cast<double>(moved) /
      (bandwidth * rates.bandwidth_efficiency * device.dtype_bandwidth_efficiency(work.dtype));
  double passes = 0;
  if (rates.extra_passes > 0) {
    // Each extra pass writes its stage's input and reads it back (target.h "fused_passes").
    const double bytes = 2 * work.flops * rates.pass_elements_per_flop *
                         static_cast<double>(ir::dtype_size_bytes(work.dtype));
    passes = rates.extra_passes * device.launch_s +
             bytes / (device.memory_bandwidth_Bps * rates.bandwidth_efficiency *
                      device.dtype_bandwidth_efficiency(work.dtype));
  }
  return device.launch_s + std::max(compute, memory) + passes;
}

double transfer_seconds(std::int64_t bytes, const Link& link) {
  if (link.shared_memory) return 0.0;
  return link.latency_s + static_cast<double>(bytes) / link.bandwidth_Bps;
}

CostVector simulate(const Placement& placement, const Target& target, Schedule* schedule) {
  Simulation sim(placement, target);
  sim.run();
  support::check_cancelled();
  if (schedule != nullptr) *schedule = sim.schedule();
  return sim.cost();
}

nlohmann::json to_json(const CostVector& cost) {
  nlohmann::json devices = nlohmann::json::array();
  for (const DeviceCost& d : cost.per_device) {
    devices.push_back({{"device", d.device},
                       {"applications", d.applications},
                       {"compute_s", d.compute_s},
                       {"comm_s", d.comm_s},
                       {"idle_s", d.idle_s},
                       {"finish_s", d.finish_s},
                       {"peak_memory_bytes", d.peak_memory_bytes},
                       {"bytes_sent", d.bytes_sent},
                       {"bytes_received", d.bytes_received},
                       {"energy_j", d.energy_j}});
  }
  return {{"makespan_s", cost.makespan_s},
          {"peak_memory_bytes", cost.peak_memory_bytes},
          {"devices_used", cost.devices_used},
          {"devices_held", cost.devices_held},
          {"energy_j", cost.energy_j},
          {"idle_energy_j", cost.idle_energy_j},
          {"bytes_moved", cost.bytes_moved},
          {"fits", cost.fits},
          {"per_device", devices}};
}

CostVector cost_from_json(const nlohmann::json& json) {
  try {
    CostVector cost{.makespan_s = json.at("makespan_s").get<double>(),
                    .peak_memory_bytes = json.at("peak_memory_bytes").get<std::int64_t>(),
                    .devices_used = json.at("devices_used").get<std::int64_t>(),
                    .devices_held = json.at("devices_held").get<std::int64_t>(),
                    .energy_j = json.at("energy_j").get<double>(),
                    .idle_energy_j = json.at("idle_energy_j").get<double>(),
                    .bytes_moved = json.at("bytes_moved").get<std::int64_t>(),
                    .fits = json.at("fits").get<bool>(),
                    .per_device = {}};
    for (const nlohmann::json& d : json.at("per_device")) {
      cost.per_device.push_back({.device = d.at("device").get<std::string>(),
                                 .applications = d.at("applications").get<std::int64_t>(),
                                 .compute_s = d.at("compute_s").get<double>(),
                                 .comm_s = d.at("comm_s").get<double>(),
                                 .idle_s = d.at("idle_s").get<double>(),
                                 .finish_s = d.at("finish_s").get<double>(),
                                 .peak_memory_bytes = d.at("peak_memory_bytes").get<std::int64_t>(),
                                 .bytes_sent = d.at("bytes_sent").get<std::int64_t>(),
                                 .bytes_received = d.at("bytes_received").get<std::int64_t>(),
                                 .energy_j = d.at("energy_j").get<double>()});
    }
    return cost;
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("not a cost vector: {}", e.what()));
  }
}

}  // namespace tapestry::cost
