// IREE-style tensor text and .npy files for meshplan-run.
#include "tensor_io.hpp"

#include "meshplan/device/size_limits.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace meshplan::tools {

namespace {

/// IEEE 754 binary16 (NumPy's float16) to float: exact, with subnormals, infinities and NaN.
float half_to_float(uint16_t h) {
  const float sign = (h & 0x8000) ? -1.0f : 1.0f;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -24);
  if (exponent == 31) return mantissa ? std::nanf("") : sign * INFINITY;
  return sign * std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
}

Result<std::vector<int64_t>> parse_dims(std::string_view spec, std::string_view whole) {
  // spec is "2x3xf32": dims then the element type.
  std::vector<int64_t> dims;
  size_t start = 0;
  while (true) {
    size_t x = spec.find('x', start);
    std::string_view part =
        spec.substr(start, x == std::string_view::npos ? std::string_view::npos : x - start);
    if (x == std::string_view::npos) {
      if (part != "f32")
        return fail(ErrorCode::invalid_argument, "--input '", whole, "': element type '", part,
                    "' is not f32");
      return dims;
    }
    char* end = nullptr;
    std::string digits(part);
    errno = 0;
    long long d = std::strtoll(digits.c_str(), &end, 10);
    if (digits.empty() || *end || d <= 0)
      return fail(ErrorCode::invalid_argument, "--input '", whole, "': dimension '", part,
                  "' is not a positive integer");
    if (d > device::kMaxDimension || errno == ERANGE)
      return fail(ErrorCode::invalid_argument, "--input '", whole, "': dimension '", part,
                  "' is larger than ", device::kMaxDimension,
                  ", the largest dimension a tensor "
                  "may have");
    dims.push_back(d);
    start = x + 1;
  }
}

/// "2x3xf32", "f32", "8xbf16": dimensions then an element type, as an unnamed --input starts.
bool is_shape_spec(std::string_view spec) {
  size_t x = spec.rfind('x');
  std::string_view type = x == std::string_view::npos ? spec : spec.substr(x + 1);
  static constexpr std::string_view kTypes[] = {"f16", "bf16", "f32", "f64", "i8",  "i16",
                                                "i32", "i64",  "u8",  "u16", "u32", "u64"};
  if (std::find(std::begin(kTypes), std::end(kTypes), type) == std::end(kTypes)) return false;
  if (x == std::string_view::npos) return true;
  std::string_view dims = spec.substr(0, x);
  return !dims.empty() && dims.find_first_not_of("0123456789x") == std::string_view::npos;
}

}  // namespace

std::pair<std::string, std::string> split_input_name(std::string_view text) {
  size_t eq = text.find('=');
  if (text.empty() || text[0] == '@' || eq == std::string_view::npos ||
      is_shape_spec(text.substr(0, eq)))
    return {"", std::string(text)};
  return {std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

Result<std::vector<runtime::Tensor>> parse_inputs(std::string_view plan,
                                                  const std::vector<std::string>& given,
                                                  const std::vector<std::string>& names,
                                                  const InputReader& read) {
  auto parse = [&](size_t i, std::string_view text) {
    return read ? read(i, text) : parse_input(text);
  };
  std::vector<std::pair<std::string, std::string>> split;
  size_t named = 0;
  for (const std::string& text : given) {
    split.push_back(split_input_name(text));
    named += !split.back().first.empty();
  }
  std::vector<runtime::Tensor> out;
  if (named == 0) {
    if (given.size() != names.size())
      return fail(ErrorCode::invalid_argument, "plan '", plan, "' takes ", names.size(),
                  " inputs, ", given.size(), " --input given");
    for (size_t i = 0; i < given.size(); ++i) {
      auto t = parse(i, given[i]);
      if (!t) return std::unexpected(with_context(t.error(), str("input '", names[i], "'")));
      out.push_back(std::move(*t));
    }
    return out;
  }
  if (named != given.size())
    return fail(ErrorCode::invalid_argument, "plan '", plan,
                "': give every --input by name (NAME=VALUE) or none (plan input order)");
  auto list = [&] {
    std::string all;
    for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
    return all;
  };
  std::vector<const std::string*> by_index(names.size(), nullptr);
  for (const auto& [name, value] : split) {
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end())
      return fail(ErrorCode::invalid_argument, "plan '", plan, "' has no input named '", name,
                  "' (its inputs: ", list(), ")");
    const std::string*& slot = by_index[static_cast<size_t>(it - names.begin())];
    if (slot) return fail(ErrorCode::invalid_argument, "input '", name, "' is given twice");
    slot = &value;
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (!by_index[i])
      return fail(ErrorCode::invalid_argument, "plan '", plan, "': no --input for input '",
                  names[i], "' (its inputs: ", list(), ")");
    auto t = parse(i, *by_index[i]);
    if (!t) return std::unexpected(with_context(t.error(), str("input '", names[i], "'")));
    out.push_back(std::move(*t));
  }
  return out;
}

Result<runtime::Tensor> parse_input(std::string_view text) {
  if (!text.empty() && text[0] == '@') return read_npy(std::string(text.substr(1)));
  size_t eq = text.find('=');
  if (eq == std::string_view::npos)
    return fail(ErrorCode::invalid_argument, "--input '", text,
                "': expected SHAPExf32=VALUES or @file.npy");
  std::vector<int64_t> dims = MESHPLAN_TRY(parse_dims(text.substr(0, eq), text));
  auto checked = device::checked_volume(dims);
  if (!checked)
    return fail(ErrorCode::invalid_argument, "--input '", text.substr(0, eq),
                "': ", checked.error().message);
  // Values are written out in the flag itself: 2^28 of them is already far beyond a command line.
  if (*checked > (int64_t{1} << 28))
    return fail(ErrorCode::invalid_argument, "--input '", text.substr(0, eq), "': ", *checked,
                " values is more than an inline --input may hold (", int64_t{1} << 28,
                "); use --input=@file.npy");
  runtime::Tensor t(dims);
  std::string values(text.substr(eq + 1));
  std::vector<float> parsed;
  const char* p = values.c_str();
  while (*p) {
    if (*p == '[' || *p == ']' || *p == ',' || *p == ' ') {
      ++p;
      continue;
    }
    char* end = nullptr;
    errno = 0;
    float v = std::strtof(p, &end);
    if (end == p)
      return fail(ErrorCode::invalid_argument, "--input '", text.substr(0, eq),
                  "': cannot read a number at '", p, "'");
    parsed.push_back(v);
    p = end;
  }
  if (parsed.size() == 1)
    std::fill(t.data.begin(), t.data.end(), parsed[0]);
  else if (static_cast<int64_t>(parsed.size()) == *checked)
    std::copy(parsed.begin(), parsed.end(), t.data.begin());
  else
    return fail(ErrorCode::invalid_argument, "--input '", text.substr(0, eq), "': ", parsed.size(),
                " values given, ", *checked, " expected (or one value to fill the tensor)");
  return t;
}

Result<runtime::Tensor> read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::not_found, "cannot open '", path, "'");
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    return fail(ErrorCode::invalid_argument, "'", path, "' is not a .npy file");
  uint8_t major = static_cast<uint8_t>(bytes[6]);
  size_t header_len, header_at;
  if (major == 1) {
    header_len =
        static_cast<uint8_t>(bytes[8]) | static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8;
    header_at = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return fail(ErrorCode::invalid_argument, "'", path, "': truncated .npy header");
    header_len = 0;
    for (int i = 0; i < 4; ++i)
      header_len |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
    header_at = 12;
  } else {
    return fail(ErrorCode::invalid_argument, "'", path, "': .npy version ", int(major),
                " is not supported");
  }
  if (header_at + header_len > bytes.size())
    return fail(ErrorCode::invalid_argument, "'", path, "': truncated .npy header");
  std::string header = bytes.substr(header_at, header_len);
  auto field = [&](const std::string& key) -> std::string {
    size_t k = header.find("'" + key + "'");
    if (k == std::string::npos) return "";
    size_t colon = header.find(':', k);
    if (colon == std::string::npos) return "";
    size_t start = header.find_first_not_of(' ', colon + 1);
    if (start == std::string::npos) return "";
    char open = header[start];
    size_t stop = open == '('    ? header.find(')', start)
                  : open == '\'' ? header.find('\'', start + 1)
                                 : header.find(',', start);
    if (stop == std::string::npos) return "";
    return header.substr(start, stop - start + 1);
  };
  std::string descr = field("descr"), order = field("fortran_order"), shape_text = field("shape");
  bool f64 = descr == "'<f8'", f16 = descr == "'<f2'";
  if (descr != "'<f4'" && !f64 && !f16)
    return fail(ErrorCode::invalid_argument, "'", path, "': dtype ", descr,
                " is not float32 ('<f4'), float64 ('<f8') or float16 ('<f2')");
  if (order.rfind("False", 0) != 0)
    return fail(ErrorCode::invalid_argument, "'", path, "': only C-order arrays are supported");
  std::vector<int64_t> dims;
  for (size_t i = 1; i < shape_text.size();) {
    if (!std::isdigit(static_cast<unsigned char>(shape_text[i]))) {
      ++i;
      continue;
    }
    errno = 0;
    char* end = nullptr;
    long long d = std::strtoll(shape_text.c_str() + i, &end, 10);
    if (errno == ERANGE || d <= 0 || d > device::kMaxDimension)
      return fail(ErrorCode::invalid_argument, "'", path, "': dimension ",
                  shape_text.substr(i, static_cast<size_t>(end - (shape_text.c_str() + i))),
                  " is outside [1, ", device::kMaxDimension, "]");
    dims.push_back(d);
    i = static_cast<size_t>(end - shape_text.c_str());
  }
  if (auto checked = device::checked_volume(dims); !checked)
    return fail(ErrorCode::invalid_argument, "'", path, "': ", checked.error().message);
  int64_t volume = 1;
  for (int64_t d : dims) {
    volume *= d;
    if (volume > (int64_t{1} << 28))
      return fail(ErrorCode::invalid_argument, "'", path, "': too large");
  }
  size_t elem = f64 ? 8 : f16 ? 2 : 4;
  size_t data_at = header_at + header_len;
  if (bytes.size() - data_at != static_cast<size_t>(volume) * elem)
    return fail(ErrorCode::invalid_argument, "'", path, "': ", bytes.size() - data_at,
                " data bytes for shape ", shape_text);
  runtime::Tensor t(dims);
  for (int64_t i = 0; i < volume; ++i) {
    if (f64) {
      double v;
      std::memcpy(&v, bytes.data() + data_at + 8 * i, 8);
      t.data[i] = static_cast<float>(v);
    } else if (f16) {
      uint16_t h;
      std::memcpy(&h, bytes.data() + data_at + 2 * i, 2);
      t.data[i] = half_to_float(h);
    } else {
      std::memcpy(&t.data[i], bytes.data() + data_at + 4 * i, 4);
    }
  }
  return t;
}

Status write_npy(const std::string& path, const runtime::Tensor& t) {
  std::string shape = "(";
  for (size_t i = 0; i < t.shape.size(); ++i)
    shape +=
        std::to_string(t.shape[i]) + (t.shape.size() == 1 || i + 1 < t.shape.size() ? "," : "");
  shape += ")";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return fail(ErrorCode::io, "cannot write '", path, "'");
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = static_cast<uint16_t>(header.size());
  char len_bytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(len_bytes, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(t.data.data()),
            static_cast<std::streamsize>(t.data.size() * sizeof(float)));
  if (!out) return fail(ErrorCode::io, "cannot write '", path, "'");
  return {};
}

std::string format_tensor(const runtime::Tensor& t) {
  std::ostringstream out;
  for (int64_t d : t.shape) out << d << "x";
  out << "f32=";
  size_t rank = t.shape.size();
  // block[d]: elements in one sub-array of dimension d; a bracket opens or closes at its edges.
  std::vector<int64_t> block(rank, 1);
  for (size_t d = rank; d-- > 0;) block[d] = t.shape[d] * (d + 1 < rank ? block[d + 1] : 1);
  for (size_t i = 0; i < t.data.size(); ++i) {
    int64_t at = static_cast<int64_t>(i);
    for (size_t d = 0; d < rank; ++d)
      if (at % block[d] == 0) out << "[";
    out << t.data[i];
    for (size_t d = 0; d < rank; ++d)
      if ((at + 1) % block[d] == 0) out << "]";
    if (i + 1 < t.data.size()) out << ",";
  }
  return out.str();
}

}  // namespace meshplan::tools
