// GraphRoles lives in the rewrite module (rewrite/graph_roles.h: the pipeline rewrite reads the
// batch from it); the cost model's standard plans and explain use it under these names.
#pragma once

#include "tapestry/rewrite/graph_roles.h"

namespace tapestry::cost {

using rewrite::graph_roles;
using rewrite::GraphRoles;
using rewrite::is_contraction_kernel;
using rewrite::OperationRoles;
using rewrite::port_roles;
using rewrite::PortRoles;

}  // namespace tapestry::cost
