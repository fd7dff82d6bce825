// Host tensors for meshplan-run: IREE-style --input text ("2x3xf32=[[1,2,3],[4,5,6]]"), NumPy
// .npy files (f32, little-endian, C order) in and out, and printing.
#pragma once

#include <string>
#include <string_view>

#include "meshplan/runtime/tensor.hpp"
#include "meshplan/schemas/error.hpp"

namespace meshplan::tools {

/// Parses one --input value: "@file.npy", or "DIMSxf32=VALUES" where VALUES is a number list
/// with optional brackets (nesting is not checked against the shape; the count is), or a single
/// number that fills the tensor ("4x4xf32=0.5").
Result<runtime::Tensor> parse_input(std::string_view text);

/// Reads a .npy file holding float32 (or float64, converted) in C order.
Result<runtime::Tensor> read_npy(const std::string& path);
/// Writes `t` as a version 1.0 .npy file of little-endian float32.
Status write_npy(const std::string& path, const runtime::Tensor& t);

/// "2x3xf32=[[1,2,3],[4,5,6]]": the IREE form, all values (for small tensors and golden tests).
std::string format_tensor(const runtime::Tensor& t);

}  // namespace meshplan::tools
