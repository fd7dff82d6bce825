#!/usr/bin/env python3
"""Compiles and runs StableHLO test programs that carry their own checks, unchanged.

The programs are of the form of StableHLO's JAX-generated test data: `func.func public @main()`
without arguments, inputs and expected values as constants (often behind `call @inputs()` /
`call @expected()`), and `stablehlo.custom_call @check.expect_close` / `@check.expect_eq` /
`@check.expect_almost_eq` comparing the op's result with the expected value. Each file is compiled
with meshplan-compile and run with meshplan-run, which evaluates the checks. Per file it prints

    NAME: ok                                        (every check met its own criterion)
    NAME: ok: within the device tolerance           (some element only within bf16 tolerance)
    NAME: refused: <the compiler's first error line>
    NAME: WRONG: <the first failed check>           (a check failed: a wrong number)
    NAME: run error: <meshplan-run's last error line>

then totals split into float32/bfloat16 programs (a file whose name names float32 or bfloat16,
or, when the name names no element type, whose checks compare only f32/bf16 tensors) and the
others. Exit status 1 when any program gave a wrong number.

Usage: survey_checks.py DIR BUILD_DIR [--float-only] [--jobs N] [--quiet]
"""
import argparse
import collections
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

TYPE_WORDS = re.compile(
    r"(?:^|_)(bfloat16|float16|float32|float64|int8|int16|int32|int64|uint8|uint16|uint32|"
    r"uint64|bool|complex64|complex128)(?:_|$)")
CHECK_TYPES = re.compile(r"custom_call @check\.\w+\([^)]*\)[^:]*:\s*\(tensor<(?:[0-9]+x)*(\w+)>")


def is_float_program(path):
    named = TYPE_WORDS.findall(os.path.basename(path)[:-len(".mlir")])
    if named:
        return any(n in ("float32", "bfloat16") for n in named)
    with open(path, encoding="utf-8", errors="replace") as f:
        types = CHECK_TYPES.findall(f.read())
    return bool(types) and all(t in ("f32", "bf16") for t in types)


def first_line(text, last=False):
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    if not lines:
        return "(no output)"
    return lines[-1] if last else lines[0]


def survey_one(path, build, tmp):
    name = os.path.basename(path)[:-len(".mlir")]
    cache = os.path.join(tmp, name + ".mpc")
    try:
        c = subprocess.run([os.path.join(build, "planner", "meshplan-compile"), path, "-o", cache,
                            "--name", name], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return name, "refused", "meshplan-compile timed out (120 s)"
    if c.returncode != 0:
        return name, "refused", first_line(c.stderr + c.stdout).replace("meshplan-compile: ", "")
    try:
        r = subprocess.run([os.path.join(build, "runtime", "meshplan-run"), cache, "--name", name],
                           capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return name, "run error", "meshplan-run timed out (300 s)"
    finally:
        if os.path.exists(cache):
            os.remove(cache)
    failed = [l for l in r.stdout.splitlines() if l.startswith("check ") and ": FAIL" in l]
    if r.returncode == 2 and failed:
        return name, "WRONG", failed[0]
    if r.returncode != 0:
        return name, "run error", first_line(r.stderr + r.stdout, last=True)
    lines = r.stdout.splitlines()
    if not any(l.startswith("check ") for l in lines):
        return name, "ok", "(no checks)"
    if any(l.startswith("check ") and "PASS within the device tolerance" in l for l in lines):
        return name, "ok", "within the device tolerance"
    return name, "ok", ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("build")
    ap.add_argument("--float-only", action="store_true",
                    help="survey only the float32/bfloat16 programs")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--quiet", action="store_true", help="print only non-ok files and totals")
    args = ap.parse_args()
    files = sorted(os.path.join(args.dir, f) for f in os.listdir(args.dir) if f.endswith(".mlir"))
    groups = {f: "float32/bfloat16" if is_float_program(f) else "other" for f in files}
    if args.float_only:
        files = [f for f in files if groups[f] == "float32/bfloat16"]
    totals = collections.defaultdict(collections.Counter)
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {f: pool.submit(survey_one, f, args.build, tmp) for f in files}
        for f in files:
            name, outcome, detail = futures[f].result()
            totals[groups[f]][outcome] += 1
            if not (args.quiet and outcome == "ok"):
                print(f"{name}: {outcome}{': ' + detail if detail else ''}", flush=True)
    outcomes = ["ok", "refused", "WRONG", "run error"]
    for group in ("float32/bfloat16", "other"):
        t = totals[group]
        if sum(t.values()):
            print(f"{group}: {sum(t.values())} programs: " +
                  ", ".join(f"{t[o]} {o}" for o in outcomes))
    return 1 if any(t["WRONG"] for t in totals.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
