// Printing an operation graph as .tap text (`tapestry print`).
//
// The printer inverts the front end: inputs (tensors no operation writes) become declarations,
// each operation an assignment to its name, graph outputs `output` statements. An operation
// whose result feeds exactly one other operation of the same statement (its name is
// `<variable>/<kernel>[.n]` as the naming rules would give it) is printed nested, so
//
//   H/linear = linear(X, W1, b1)  and  H = relu(H/linear)
//
// print as `H = relu(linear(X, W1, b1))`: reading the printed text back gives the same graph
// (same names, kernels, params, ranges and IPFs). Parameters equal to their defaults are left out.
// Graphs that .tap cannot express exactly (a kernel the registry does not know, several outputs,
// labels that are not identifiers) still print, with `#` comments saying what is approximated.
#pragma once

#include <string>

#include "tapestry/ir/graph.h"
#include "tapestry/metakernel/signature_registry.h"

namespace tapestry::metakernel {

std::string print_tap(const ir::Graph& graph, const SignatureRegistry& signatures);

}  // namespace tapestry::metakernel
