"""The result of ``Graph.optimize``: the Pareto front of plans as Python objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from . import _core


@dataclass(frozen=True)
class FrontMember:
    """One plan of the front: ``plan`` is a dict ``Graph.run``/``cost``/``explain`` take."""

    name: str
    plan: dict[str, Any]
    cost: dict[str, Any]
    score: list[float]
    found_at: int


@dataclass(frozen=True)
class Front:
    """The Pareto front ``tapestry optimize`` finds: members sorted by score, the objectives they
    are scored on, and how the search went. ``_repr_svg_`` draws it (the SVG ``tapestry optimize
    --svg`` writes); ``plot()`` draws it with matplotlib when that is installed."""

    objectives: list[str]
    members: list[FrontMember]
    evaluations: int
    stopped_by: str
    json: dict[str, Any] = field(repr=False)
    svg: str = field(repr=False)

    def __len__(self) -> int:
        return len(self.members)

    def __iter__(self):
        return iter(self.members)

    def __getitem__(self, i: int) -> FrontMember:
        return self.members[i]

    def best(self, objective: str) -> FrontMember:
        """The member with the least value of ``objective`` (one of ``objectives``)."""
        if objective not in self.objectives:
            raise ValueError(f"objective {objective!r}: the front is scored on {self.objectives}")
        k = self.objectives.index(objective)
        return min(self.members, key=lambda m: m.score[k])

    def to_dict(self) -> dict[str, Any]:
        """The JSON form ``tapestry optimize --out`` writes."""
        return self.json

    def _repr_svg_(self) -> str:
        return self.svg

    def plot(self, x: str | None = None, y: str | None = None, ax: Any = None):
        """A scatter plot of the front on two objectives (the first two by default), each point
        labelled with its member's name. Needs matplotlib (Debian's python3-matplotlib)."""
        try:
            import matplotlib.pyplot as plt
        except ImportError as e:  # pragma: no cover - depends on the machine
            raise ImportError("Front.plot needs matplotlib: apt-get install python3-matplotlib "
                              "(or use the SVG: display(front))") from e
        x = x or self.objectives[0]
        y = y or (self.objectives[1] if len(self.objectives) > 1 else self.objectives[0])
        kx, ky = self.objectives.index(x), self.objectives.index(y)
        if ax is None:
            _, ax = plt.subplots()
        xs = [m.score[kx] for m in self.members]
        ys = [m.score[ky] for m in self.members]
        ax.scatter(xs, ys)
        for m, a, b in zip(self.members, xs, ys):
            ax.annotate(m.name, (a, b), textcoords="offset points", xytext=(4, 4))
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        ax.set_title(f"{len(self.members)} plans, {self.evaluations} evaluated")
        return ax


def optimize(graph: _core.Graph, target: Any, objectives: str | Sequence[str] | None = None,
             time_budget: float | None = None, max_evals: int | None = None, seed: int = 0,
             threads: int | None = None, max_memory_per_device: int | str | None = None,
             max_devices: int | None = None, tie_layers: bool = False) -> Front:
    """Searches plans of ``graph`` on ``target`` for the Pareto front of ``objectives`` (time,
    memory, devices, energy; all four by default), as ``tapestry optimize`` does. Stops at
    ``max_evals`` plans priced or after ``time_budget`` seconds (give one or both); the same seed
    and ``max_evals`` give the same front on any thread count. The GIL is released meanwhile."""
    data, svg = _core._optimize(graph, target, objectives, time_budget, max_evals, seed, threads,
                                max_memory_per_device, max_devices, tie_layers)
    members = [FrontMember(m["name"], m["plan"], m["cost"], list(m["score"]), m["found_at"])
               for m in data["front"]]
    return Front(list(data["objectives"]), members, data["evaluations"], data["stopped_by"], data,
                 svg)
