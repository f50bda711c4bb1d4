// Printing an operation graph as .tap text (`tapestry print`).
//
// The printer inverts the front end: tensors no call produces become declarations, each
// operation a statement, graph outputs `output` statements. An operation its kernel rebuilds
// exactly prints as a call assigned to its name; one whose result feeds exactly one other
// operation of the same statement (its name is `<variable>/<kernel>[.n]` as the naming rules
// would give it) prints nested, so
//
//   H/linear = linear(X, W1, b1)  and  H = relu(H/linear)
//
// print as `H = relu(linear(X, W1, b1))`. Parameters equal to their defaults are left out.
// Every other operation — another system's kernel (`op:add`), several outputs, a result tensor
// labelled apart from its operation, IPFs or params the kernel would not derive — prints as an
// operation statement, its loom node verbatim (`operation {"label": …, "body": …}`), and the
// tensors it writes are declared. Names that are not identifiers print as strings (`"op:add"`).
//
// The result is a round trip: building the printed text gives the same operation graph
// (ir/graph_compare.h: every Tensor and Operation with its label, body and tags; applications,
// notes and opaque nodes are not part of it). The printer checks this itself: it builds what it
// printed and prints verbatim every operation that did not come back equal. What .tap cannot say
// — an unlabelled or repeated tensor label, tensor fields and tags besides `graphOutput`, notes
// and opaque nodes — is named in `# note:` lines. A graph with a cycle is an Error.
#pragma once

#include <string>

#include "tapestry/ir/graph.h"
#include "tapestry/metakernel/signature_registry.h"

namespace tapestry::metakernel {

std::string print_tap(const ir::Graph& graph, const SignatureRegistry& signatures);

}  // namespace tapestry::metakernel
