// JSON forms of ZSpace values — identical to Tapestry's loom JSON:
//
//   Point            [2, 3]
//   Range            {"start": [2, 3], "end": [4, 5]}
//   AffineMap        {"projection": [[1, 0], [0, 2]], "offset": [4, 5]}
//   IndexProjection  {"affineMap": {"projection": [[1, -1]], "offset": [0]}, "shape": [1]}
//
// The `*_from_json` readers check types, ranks and value invariants and throw Error with a
// message that names the offending member relative to the value read ("/affineMap/offset: ...");
// callers prefix their own JSON path. Unknown members are rejected (the loom schemas say
// additionalProperties: false). Numbers must be integers within int64.
#pragma once

#include <nlohmann/json.hpp>

#include "tapestry/zspace/affine_map.h"
#include "tapestry/zspace/index_projection.h"
#include "tapestry/zspace/point.h"
#include "tapestry/zspace/range.h"

namespace tapestry::zspace {

nlohmann::json to_json(const Point& point);
nlohmann::json to_json(const Range& range);
nlohmann::json to_json(const AffineMap& map);
nlohmann::json to_json(const IndexProjection& ipf);

Point point_from_json(const nlohmann::json& json);
Range range_from_json(const nlohmann::json& json);
AffineMap affine_map_from_json(const nlohmann::json& json);
IndexProjection index_projection_from_json(const nlohmann::json& json);

}  // namespace tapestry::zspace
