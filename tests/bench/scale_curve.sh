#!/bin/sh
# Planning-time scaling curve: greedy and beam on the ~1k/10k/50k/100k-op graphs of
# scale_bench.cpp and graph.json import of the 100k-op one, each in its own process (so its
# peak_rss_mb counter is its own); medians of 3 runs up to 10k ops, LARGE_REPS runs above (default
# 1; set LARGE_REPS=3 for medians there too, on a loaded machine). Given two
# bench binaries (e.g. the previous build and this one) it runs them in turn per row.
# The reporter colours its lines whatever --benchmark_color says: the colour codes are dropped.
# usage: tests/bench/scale_curve.sh BUILD/tests/bench/meshplan_bench [OTHER/meshplan_bench]
set -eu
row() {
  bin=$1
  filter=$2
  reps=$3
  printf '%s: ' "$bin"
  "$bin" --benchmark_filter="$filter" --benchmark_repetitions="$reps" \
    --benchmark_report_aggregates_only=true --benchmark_color=false 2>/dev/null |
    sed 's/\x1b\[[0-9;]*m//g' | grep -E '^BM_' | grep -vE '_(mean|stddev|cv) ' | tail -1
}
for size in 1000 10000 50000 100000; do
  reps=3
  if [ "$size" -gt 10000 ]; then reps=${LARGE_REPS:-1}; fi
  for policy in greedy beam; do
    for bin in "$@"; do row "$bin" "^BM_PlanScale/$policy/$size\$" "$reps"; done
  done
done
for bin in "$@"; do row "$bin" '^BM_ImportGraphJson/100000$' 3; done
