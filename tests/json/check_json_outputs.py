"""Every JSON meshplan's tools print parses with a strict JSON parser (Python's json module,
with NaN and Infinity refused): --emit=plan-json, --emit=graph-json (graph.json and StableHLO
input), meshplan-run inspect --json (one chip and a mesh plan), --trace and
meshplan-zoo --bench-json.

usage: check_json_outputs.py BIN_DIR SOURCE_DIR WORK_DIR
"""
import json
import pathlib
import shutil
import subprocess
import sys


def refuse_constant(name):
    raise ValueError(f"non-standard JSON constant {name}")


def parse(what, text):
    try:
        return json.loads(text, parse_constant=refuse_constant)
    except ValueError as e:
        sys.exit(f"FAIL {what}: not strict JSON: {e}\n--- first 400 chars ---\n{text[:400]}")


def run(what, *cmd):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit(f"FAIL {what}: exit {r.returncode}\n{r.stderr}")
    return r.stdout


def expect(what, cond):
    if not cond:
        sys.exit(f"FAIL {what}")
    print(f"ok   {what}")


def main():
    bin_dir, src, work = (pathlib.Path(a) for a in sys.argv[1:4])
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    compile_ = bin_dir / "planner" / "meshplan-compile"
    run_ = bin_dir / "runtime" / "meshplan-run"
    zoo = bin_dir / "examples" / "meshplan-zoo"
    models = src / "examples" / "models"
    cache = work / "plans.mpc"

    plan = parse("plan-json", run("plan-json", compile_, models / "mlp.json", "-o", cache,
                                  "--name", "mlp", "--policy", "greedy", "--emit=plan-json"))
    expect("plan-json has a header naming the policy",
           plan.get("header", {}).get("options", {}).get("policy") == "greedy")

    graph = parse("graph-json", run("graph-json", compile_, models / "mlp.json", "--emit=graph-json"))
    expect("graph-json of mlp.json names its ops",
           graph.get("name") == "mlp" and len(graph.get("ops", [])) > 0)
    # The printed graph reads back and plans to the same key as the original.
    (work / "again.json").write_text(json.dumps(graph))
    again = parse("plan-json of the printed graph",
                  run("graph-json round trip", compile_, work / "again.json", "--policy", "greedy",
                      "--emit=plan-json"))
    expect("the printed graph plans to the same key", again["header"]["key"] == plan["header"]["key"])

    lowered = parse("graph-json (StableHLO)", run("graph-json mlir", compile_,
                                                  models / "tp_mlp.mlir", "--mesh", "1x8",
                                                  "--emit=graph-json"))
    expect("graph-json of tp_mlp.mlir is a per-device program", len(lowered.get("ops", [])) > 0)

    inspect = parse("inspect --json", run("inspect", run_, "inspect", cache, "--name", "mlp", "--json"))
    expect("inspect --json holds the plan's ops", "ops" in json.dumps(inspect))

    run("compile mesh plan", compile_, models / "tp_mlp.mlir", "--mesh", "1x8", "-o", cache,
        "--name", "tp")
    parse("inspect --json (mesh plan)", run("inspect mesh", run_, "inspect", cache, "--name", "tp", "--json"))
    print("ok   inspect --json (mesh plan)")

    trace = work / "trace.json"
    run("trace", run_, cache, "--name", "mlp", f"--trace={trace}")
    parse("--trace", trace.read_text())
    print("ok   --trace")

    bench = work / "policies.json"
    run("zoo bench-json", zoo, "--cache", work / "zoo.mpc", "--models", "mlp", "--policies",
        "dram,greedy", "--no-run", "--bench-json", bench)
    parse("--bench-json", bench.read_text())
    print("ok   meshplan-zoo --bench-json")


if __name__ == "__main__":
    main()
