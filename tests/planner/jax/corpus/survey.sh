#!/bin/sh
# Compiles every module here with meshplan-compile and runs it with meshplan-run --check:
# prints one line per module (ok / compile: first error line / run: last output line).
# Float arguments get meshplan-run's random values; integer and i1 arguments get small
# non-negative integers (valid indices for every module here), as meshplan-run takes them (f32);
# zero-size arguments take no input.
# Exits 1 when a module is not ok (CTest runs it as jax_corpus).
# Usage: tests/planner/jax/corpus/survey.sh BUILD_DIR
B=${1:-build}
T=$(mktemp -d)
bad=0
for f in "$(dirname "$0")"/*.mlir; do
  n=$(basename "$f" .mlir)
  if ! out=$(timeout 60 "$B/planner/meshplan-compile" "$f" -o "$T/c.mpc" --name "$n" 2>&1); then
    echo "$n: compile: $(echo "$out" | grep -v '^$' | head -1)"; bad=1; continue
  fi
  inputs=$(python3 - "$f" <<'PY'
import re, sys, random
text = open(sys.argv[1]).read()
sig = re.search(r"@main\((.*?)\)\s*->", text, re.S).group(1)
rng = random.Random(7)
args = []
for shape, el in re.findall(r"tensor<((?:\d+x)*)(\w+)>", sig):
    dims = [int(d) for d in shape.split("x") if d]
    n = 1
    for d in dims: n *= d
    if n == 0:
        continue  # a zero-size argument takes no input
    if el.startswith("f") or el == "bf16":
        vals = [round(rng.uniform(-2, 2), 3) for _ in range(n)]
    else:
        vals = [rng.randrange(0, 3) for _ in range(n)]
    s = "x".join(map(str, dims)) + ("x" if dims else "") + "f32"
    args.append("--input=%s=%s" % (s, ",".join(map(str, vals))))
print(" ".join(args))
PY
)
  # shellcheck disable=SC2086
  if ! out=$(timeout 60 "$B/runtime/meshplan-run" "$T/c.mpc" --name "$n" --check $inputs 2>&1); then
    echo "$n: run: $(echo "$out" | grep -v '^$' | tail -1)"; bad=1; continue
  fi
  echo "$n: ok"
done
rm -rf "$T"
exit $bad
