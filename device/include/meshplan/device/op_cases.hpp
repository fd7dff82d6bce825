// Case labels generated from ops.def for switches over OpKind that handle the ops of one family
// and must still name every other op: with no `default:`, -Wswitch (an error under -Werror)
// then names each switch a new op of that family has to be handled in.
//
//   switch (kind) {
//     case OpKind::all_gather: ...   // the family's ops, each handled
//   #define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, scalar)
//     MESHPLAN_CASE_OUTSIDE_(family, collective, name)   (one line, or continued)
//   #include "meshplan/device/ops.def"
//   #undef MESHPLAN_OP
//       return not_a_collective();  // every op of every other family
//   }
#pragma once

#include "meshplan/device/types.hpp"

// MESHPLAN_SAME_(a, b): 1 if the family tokens a and b are equal, else 0 (a probe: only the
// MESHPLAN_SAME_x_x macros expand to two arguments).
#define MESHPLAN_PROBE_ ~, 1
#define MESHPLAN_SECOND_(a, b, ...) b
#define MESHPLAN_IS_PROBE_(...) MESHPLAN_SECOND_(__VA_ARGS__, 0, )
#define MESHPLAN_SAME_(a, b) MESHPLAN_IS_PROBE_(MESHPLAN_SAME_##a##_##b)
#define MESHPLAN_SAME_matmul_matmul MESHPLAN_PROBE_
#define MESHPLAN_SAME_eltwise_unary_eltwise_unary MESHPLAN_PROBE_
#define MESHPLAN_SAME_eltwise_binary_eltwise_binary MESHPLAN_PROBE_
#define MESHPLAN_SAME_compare_compare MESHPLAN_PROBE_
#define MESHPLAN_SAME_select_select MESHPLAN_PROBE_
#define MESHPLAN_SAME_reduction_reduction MESHPLAN_PROBE_
#define MESHPLAN_SAME_softmax_softmax MESHPLAN_PROBE_
#define MESHPLAN_SAME_norm_norm MESHPLAN_PROBE_
#define MESHPLAN_SAME_memory_memory MESHPLAN_PROBE_
#define MESHPLAN_SAME_shape_shape MESHPLAN_PROBE_
#define MESHPLAN_SAME_gather_gather MESHPLAN_PROBE_
#define MESHPLAN_SAME_convert_convert MESHPLAN_PROBE_
#define MESHPLAN_SAME_conv_conv MESHPLAN_PROBE_
#define MESHPLAN_SAME_pool_pool MESHPLAN_PROBE_
#define MESHPLAN_SAME_collective_collective MESHPLAN_PROBE_
#define MESHPLAN_CAT_(a, b) MESHPLAN_CAT2_(a, b)
#define MESHPLAN_CAT2_(a, b) a##b
#define MESHPLAN_KEEP_0(x) x
#define MESHPLAN_KEEP_1(x)
#define MESHPLAN_KEEP_000(x) x
#define MESHPLAN_KEEP_100(x)
#define MESHPLAN_KEEP_010(x)
#define MESHPLAN_KEEP_001(x)
#define MESHPLAN_KEEP_0000(x) x
#define MESHPLAN_KEEP_1000(x)
#define MESHPLAN_KEEP_0100(x)
#define MESHPLAN_KEEP_0010(x)
#define MESHPLAN_KEEP_0001(x)
#define MESHPLAN_KEEP_000000(x) x
#define MESHPLAN_KEEP_100000(x)
#define MESHPLAN_KEEP_010000(x)
#define MESHPLAN_KEEP_001000(x)
#define MESHPLAN_KEEP_000100(x)
#define MESHPLAN_KEEP_000010(x)
#define MESHPLAN_KEEP_000001(x)
/// `case OpKind::name:` unless `family` is `f1`.
#define MESHPLAN_CASE_OUTSIDE_(family, f1, name) \
  MESHPLAN_CAT_(MESHPLAN_KEEP_, MESHPLAN_SAME_(family, f1))(case ::meshplan::device::OpKind::name:)
/// `case OpKind::name:` unless `family` is one of f1 .. f4 (four distinct families).
#define MESHPLAN_CASE_OUTSIDE4_(family, f1, f2, f3, f4, name)                            \
  MESHPLAN_CAT_(MESHPLAN_KEEP_,                                                          \
                MESHPLAN_CAT_(MESHPLAN_SAME_(family, f1),                                \
                              MESHPLAN_CAT_(MESHPLAN_SAME_(family, f2),                  \
                                            MESHPLAN_CAT_(MESHPLAN_SAME_(family, f3),    \
                                                          MESHPLAN_SAME_(family, f4))))) \
  (case ::meshplan::device::OpKind::name:)
/// `case OpKind::name:` unless `family` is one of f1 .. f3 (three distinct families).
#define MESHPLAN_CASE_OUTSIDE3_(family, f1, f2, f3, name)                                 \
  MESHPLAN_CAT_(MESHPLAN_KEEP_, MESHPLAN_CAT_(MESHPLAN_SAME_(family, f1),                 \
                                              MESHPLAN_CAT_(MESHPLAN_SAME_(family, f2),   \
                                                            MESHPLAN_SAME_(family, f3)))) \
  (case ::meshplan::device::OpKind::name:)
/// `case OpKind::name:` unless `family` is one of f1 .. f6 (six distinct families).
#define MESHPLAN_CASE_OUTSIDE6_(family, f1, f2, f3, f4, f5, f6, name)                            \
  MESHPLAN_CAT_(                                                                                 \
      MESHPLAN_KEEP_,                                                                            \
      MESHPLAN_CAT_(                                                                             \
          MESHPLAN_CAT_(MESHPLAN_SAME_(family, f1),                                              \
                        MESHPLAN_CAT_(MESHPLAN_SAME_(family, f2), MESHPLAN_SAME_(family, f3))),  \
          MESHPLAN_CAT_(MESHPLAN_SAME_(family, f4),                                              \
                        MESHPLAN_CAT_(MESHPLAN_SAME_(family, f5), MESHPLAN_SAME_(family, f6))))) \
  (case ::meshplan::device::OpKind::name:)
