// Program checks: finding them among a plan's outputs and comparing them after a run.
#include "meshplan/runtime/program_checks.hpp"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

namespace meshplan::runtime {

namespace {

constexpr std::string_view kPrefix = "check:";

/// `check:<i>:<kind>:<element>:<role>@<location>` split; false when `name` is not of that form.
bool parse_name(std::string_view name, size_t* index, std::string_view* kind,
                std::string_view* element, std::string_view* role, std::string_view* loc) {
  if (!name.starts_with(kPrefix)) return false;
  size_t at = name.find('@');
  if (at == std::string_view::npos) return false;
  std::string_view head = name.substr(kPrefix.size(), at - kPrefix.size());
  *loc = name.substr(at + 1);
  std::string_view parts[4];
  for (int k = 0; k < 4; ++k) {
    size_t colon = head.find(':');
    if ((k < 3) != (colon != std::string_view::npos)) return false;
    parts[k] = head.substr(0, colon);
    head = k < 3 ? head.substr(colon + 1) : std::string_view{};
    if (parts[k].empty()) return false;
  }
  auto [end, ec] = std::from_chars(parts[0].data(), parts[0].data() + parts[0].size(), *index);
  if (ec != std::errc{} || end != parts[0].data() + parts[0].size()) return false;
  *kind = parts[1];
  *element = parts[2];
  *role = parts[3];
  return *role == "actual" || *role == "expected";
}

bool is_float(std::string_view e) {
  return e == "f32" || e == "bf16" || e == "f16" || e == "f64";
}

/// Distance in units in the last place of f32 (sign-magnitude order, as StableHLO's
/// interpreter counts), both finite.
uint64_t ulp_f32(float a, float b) {
  auto mag = [](float x) { return std::bit_cast<uint32_t>(x) & 0x7fffffffu; };
  uint64_t ma = mag(a), mb = mag(b);
  if (std::signbit(a) != std::signbit(b)) return ma + mb;
  return ma > mb ? ma - mb : mb - ma;
}

/// The check's own criterion for one float element pair.
bool own_criterion(std::string_view kind, std::string_view element, float a, float e) {
  if (std::isnan(a) || std::isnan(e)) return std::isnan(a) && std::isnan(e);
  if (!std::isfinite(a) || !std::isfinite(e)) return a == e;
  if (kind == "expect_eq") return a == e && std::signbit(a) == std::signbit(e);
  if (kind == "expect_almost_eq") return std::fabs(double(a) - double(e)) <= 1e-3;
  // expect_close: 3 ULP of the module's type. f64 and f16 are computed in f32, whose ULPs are
  // not theirs: only equality meets the criterion there.
  if (element == "f32") return ulp_f32(a, e) <= 3;
  if (element == "bf16") {
    auto low = [](float x) { return std::bit_cast<uint32_t>(x) & 0xffffu; };
    if (low(a) == 0 && low(e) == 0) return ulp_f32(a, e) / 65536 <= 3;
    return ulp_f32(a, e) <= 3u * 65536;
  }
  return a == e;
}

bool device_tolerance(float a, float e) {
  if (!std::isfinite(a) || !std::isfinite(e)) return (std::isnan(a) && std::isnan(e)) || a == e;
  return std::fabs(double(a) - double(e)) <= kCheckAbsTolerance + kCheckRelTolerance * std::fabs(e);
}

/// How far past the device tolerance an element is (non-finite mismatches: infinity).
double badness(float a, float e) {
  if (!std::isfinite(a) || !std::isfinite(e))
    return (std::isnan(a) && std::isnan(e)) || a == e ? 0 : std::numeric_limits<double>::infinity();
  return std::fabs(double(a) - double(e)) /
         (kCheckAbsTolerance + kCheckRelTolerance * std::fabs(e));
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

Result<std::vector<ProgramCheck>> program_checks(const Executable& exe) {
  std::map<size_t, ProgramCheck> found;
  std::map<size_t, int> roles;  // bit 1: actual, bit 2: expected
  for (size_t i = 0; i < exe.output_count(); ++i) {
    std::string_view name = exe.output_name(i);
    if (!name.starts_with(kPrefix)) continue;
    size_t index = 0;
    std::string_view kind, element, role, loc;
    if (!parse_name(name, &index, &kind, &element, &role, &loc))
      return fail(ErrorCode::corrupt, "plan '", exe.plan().name(), "': output ", i, " '", name,
                  "' is not a check output (check:<i>:<kind>:<element>:<actual|expected>@<loc>)");
    ProgramCheck& c = found[index];
    int bit = role == "actual" ? 1 : 2;
    if ((roles[index] & bit) ||
        (roles[index] && (c.kind != kind || c.element != element || c.location != loc)))
      return fail(ErrorCode::corrupt, "plan '", exe.plan().name(), "': check output '", name,
                  "' does not pair with check ", index, "'s other output");
    roles[index] |= bit;
    c.index = index;
    c.kind = kind;
    c.element = element;
    c.location = loc;
    (bit == 1 ? c.actual : c.expected) = i;
  }
  std::vector<ProgramCheck> out;
  for (auto& [index, c] : found) {
    if (roles[index] != 3)
      return fail(ErrorCode::corrupt, "plan '", exe.plan().name(), "': check ", index, " at ",
                  c.location, " has no ", roles[index] == 1 ? "expected" : "actual", " output");
    if (exe.output_shape(c.actual).size() != exe.output_shape(c.expected).size() ||
        !std::equal(exe.output_shape(c.actual).begin(), exe.output_shape(c.actual).end(),
                    exe.output_shape(c.expected).begin()))
      return fail(ErrorCode::corrupt, "plan '", exe.plan().name(), "': check ", index, " at ",
                  c.location, " compares outputs of different shapes");
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<CheckOutcome> evaluate_checks(const std::vector<ProgramCheck>& checks,
                                          const std::vector<Tensor>& outputs) {
  std::vector<CheckOutcome> result;
  for (const ProgramCheck& c : checks) {
    CheckOutcome o;
    o.check = c;
    const Tensor& a = outputs.at(c.actual);
    const Tensor& e = outputs.at(c.expected);
    o.elements = std::min(a.data.size(), e.data.size());
    o.exact = a.data.size() == e.data.size();
    double worst = -1;
    size_t worst_at = 0;
    const bool fp = is_float(c.element);
    for (size_t i = 0; i < o.elements; ++i) {
      float x = a.data[i], y = e.data[i];
      bool own = fp ? own_criterion(c.kind, c.element, x, y) : x == y;
      bool pass = own || (fp && device_tolerance(x, y));
      o.exact &= own;
      o.failures += pass ? 0 : 1;
      double bad = own ? 0 : fp ? badness(x, y) : std::numeric_limits<double>::infinity();
      if (bad > worst) worst = bad, worst_at = i;
    }
    o.ok = a.data.size() == e.data.size() && o.failures == 0;
    if (o.elements > 0) {
      o.worst_actual = a.data[worst_at];
      o.worst_expected = e.data[worst_at];
      o.worst_diff = std::fabs(o.worst_actual - o.worst_expected);
      size_t rem = worst_at;
      o.worst_index.assign(a.shape.size(), 0);
      for (size_t d = a.shape.size(); d-- > 0;) {
        o.worst_index[d] = static_cast<int64_t>(rem % static_cast<size_t>(a.shape[d]));
        rem /= static_cast<size_t>(a.shape[d]);
      }
    }
    result.push_back(std::move(o));
  }
  return result;
}

std::string CheckOutcome::text() const {
  std::string s = str("check ", check.index, " (", check.kind, ", ", check.element, ") at ",
                      check.location, ": ");
  std::string where = "[";
  for (size_t d = 0; d < worst_index.size(); ++d) where += str(d ? ", " : "", worst_index[d]);
  where += "]";
  std::string worst = str("worst at ", where, ": actual ", number(worst_actual), ", expected ",
                          number(worst_expected), ", |difference| ", number(worst_diff));
  if (!ok)
    return s +
           str("FAIL: ", failures, " of ", elements, " elements outside the tolerance; ", worst);
  if (exact) return s + "PASS";
  return s + str("PASS within the device tolerance (", worst, ")");
}

}  // namespace meshplan::runtime
