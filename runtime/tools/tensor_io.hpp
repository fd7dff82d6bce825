// Host tensors for meshplan-run: IREE-style --input text ("2x3xf32=[[1,2,3],[4,5,6]]"), NumPy
// .npy files (f32, little-endian, C order) in and out, and printing.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "meshplan/runtime/tensor.hpp"
#include "meshplan/schemas/error.hpp"

namespace meshplan::tools {

/// Parses one --input value: "@file.npy", or "DIMSxf32=VALUES" where VALUES is a number list
/// with optional brackets (nesting is not checked against the shape; the count is), or a single
/// number that fills the tensor ("4x4xf32=0.5").
Result<runtime::Tensor> parse_input(std::string_view text);

/// Splits a named --input value, "x=@x.npy" or "x=2x3xf32=VALUES", into {"x", value}. A value
/// without a name ("@x.npy", "2x3xf32=VALUES": what precedes its first '=' is a shape) comes
/// back with an empty name.
std::pair<std::string, std::string> split_input_name(std::string_view text);

/// The --input values of a run, in plan input order: either all positional (in the plan's
/// order) or all named (each input of `names`, the plan's input names, exactly once). The
/// errors name the plan, the input and what is missing, unknown or given twice.
/// `read`, when given, reads each value instead of parse_input (with the plan input's index).
using InputReader = std::function<Result<runtime::Tensor>(size_t index, std::string_view text)>;
Result<std::vector<runtime::Tensor>> parse_inputs(std::string_view plan,
                                                  const std::vector<std::string>& given,
                                                  const std::vector<std::string>& names,
                                                  const InputReader& read = {});

/// Reads a .npy file holding float32 (or float64, converted) in C order.
Result<runtime::Tensor> read_npy(const std::string& path);
/// Writes `t` as a version 1.0 .npy file of little-endian float32.
Status write_npy(const std::string& path, const runtime::Tensor& t);

/// "2x3xf32=[[1,2,3],[4,5,6]]": the IREE form, all values (for small tensors and golden tests).
std::string format_tensor(const runtime::Tensor& t);

}  // namespace meshplan::tools
