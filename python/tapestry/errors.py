"""Tapestry's exceptions.

Every message is the engine's own, with its location: ``file:line:col`` for ``.tap`` source,
the node id for loom JSON, the JSON path for plans and targets, the tensor's name for inputs.
Where the engine located the problem as data, ``diagnostics`` lists it too, one dict each::

    {"severity": "error", "message": "no operation named 'Nope' (operations: …)",
     "pointer": "/ops/Nope", "text": "/ops/Nope: no operation named 'Nope' (operations: …)"}

with ``code`` (the rule's dash-case name) when it has one and, of ``file``, ``line``, ``column``,
``pointer`` (a JSON pointer into a plan or target), ``node`` and ``node_note``, those that are
known; ``text`` is the diagnostic as the message prints it.
"""

from __future__ import annotations

from typing import Any


class Error(Exception):
    """Bad input to Tapestry (a plan, a target, a file, …): the message says what and where;
    ``diagnostics`` the located problems as data (empty when the message is all there is)."""

    diagnostics: list[dict[str, Any]]

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.diagnostics = []


class GraphError(Error):
    """The graph does not build or validate: a ``.tap`` or JSON error, or a builder call its
    kernel rejects (``linear: X has 1024 columns but W has 512 (its in dimension)``)."""


class InputError(Error, ValueError):
    """``Graph.run`` inputs that do not fit the graph: a missing or unknown name, a wrong dtype
    or shape. Raised before any work starts."""


class VerificationError(Error):
    """``Graph.run(..., verify=True)`` or ``Graph.verify`` and an output FAILed its check, or
    was UNCHECKED (cells whose error the oracle cannot bound; ``allow_unchecked=True`` accepts
    them, unsafely).

    ``report`` is the verification report (``{"pass", "verdict", "unchecked_cells", "lambda",
    "outputs": [per output]}``, ``verdict`` one of ``"pass"``, ``"fail"``, ``"unchecked"``)
    and ``outputs`` the outputs that were computed (they help find the fault)."""

    report: dict[str, Any]
    outputs: dict[str, Any]

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.report = {}
        self.outputs = {}
