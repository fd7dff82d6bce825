// The generated FlatBuffers types and the embedded schema text for JSON parsing.
#pragma once

#include <string_view>

#include "meshplan/schemas/cache_generated.h"
#include "meshplan/schemas/common_generated.h"
#include "meshplan/schemas/device_generated.h"
#include "meshplan/schemas/graph_generated.h"
#include "meshplan/schemas/plan_generated.h"

namespace meshplan::schemas {

/// Text of common.fbs + graph.fbs, for flatbuffers::Parser (graph JSON files).
extern const std::string_view kGraphSchemaText;
/// Text of common.fbs + plan.fbs, for printing plans as JSON.
extern const std::string_view kPlanSchemaText;
/// Text of common.fbs + device.fbs, for chip and mesh descriptor JSON files.
extern const std::string_view kDeviceSchemaText;

}  // namespace meshplan::schemas
