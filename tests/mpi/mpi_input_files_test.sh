#!/usr/bin/env bash
# meshplan-run with per-chip input files (--input=NAME=@FILE{c}.npy) for a pre-sharded plan:
# in-process and under mpirun on 2 and 4 ranks the outputs are byte-identical and --check
# passes; each rank reads only its own chips' files (rank 0 all of them with --check); a missing
# chip file is named by the rank that needs it; a sharded (not pre-sharded) input is refused.
#   mpi_input_files_test.sh "MPIRUN..." MESHPLAN-COMPILE MESHPLAN-RUN PYTHON SOURCE_DIR WORK_DIR
set -euo pipefail
read -r -a MPIRUN <<< "$1"
COMPILE=$2 RUN=$3 PYTHON=$4 SRC=$5 WORK=$6
rm -rf "$WORK" && mkdir -p "$WORK/in"
fail() { echo "FAIL: $*"; exit 1; }
"$COMPILE" "$SRC/examples/models/tp_mlp.mlir" -o "$WORK/p.mpc" --presharded > /dev/null
"$PYTHON" "$SRC/tests/mpi/make_chip_inputs.py" "$WORK/in"
IN=(--input=arg0=@"$WORK/in/x.npy" --input=arg1=@"$WORK/in/w1.chip{c}.npy"
    --input=arg2=@"$WORK/in/b1.chip{c}.npy" --input=arg3=@"$WORK/in/w2.chip{c}.npy")

"$RUN" "$WORK/p.mpc" --name tp_mlp "${IN[@]}" --check --output=@"$WORK/ref.npy" \
  > "$WORK/ref.txt" 2>&1 || { cat "$WORK/ref.txt"; fail "in-process run"; }
grep -q "check: .*PASS" "$WORK/ref.txt" || fail "in-process: no passing check"
grep -q "^read 24 per-chip input files" "$WORK/ref.txt" || fail "in-process: not 24 files read"
for n in 2 4; do
  "${MPIRUN[@]}" -np $n "$RUN" "$WORK/p.mpc" --name tp_mlp "${IN[@]}" \
    --output=@"$WORK/mpi$n.npy" > "$WORK/mpi$n.txt" 2>&1 || { cat "$WORK/mpi$n.txt"; fail "$n ranks"; }
  cat "$WORK/mpi$n.txt"
  # 3 inputs x 8 chips, each rank its own chips' files only: chips 4-7 reach the mesh only
  # through ranks other than 0.
  [[ $(grep -c "^rank [0-9] of $n: read $((24 / n)) per-chip input files" "$WORK/mpi$n.txt") == $n ]] ||
    fail "$n ranks: per-rank file counts"
  cmp "$WORK/ref.npy" "$WORK/mpi$n.npy" || fail "$n ranks: output differs from the in-process run"
done
"${MPIRUN[@]}" -np 2 "$RUN" "$WORK/p.mpc" --name tp_mlp "${IN[@]}" --check > "$WORK/check.txt" 2>&1 ||
  { cat "$WORK/check.txt"; fail "2 ranks --check"; }
grep -q "check: .*PASS" "$WORK/check.txt" || fail "2 ranks: no passing check"
grep -q "^rank 0 of 2: read 24 per-chip input files" "$WORK/check.txt" || fail "rank 0 with --check"

rm "$WORK/in/w1.chip5.npy"
if "${MPIRUN[@]}" -np 2 "$RUN" "$WORK/p.mpc" --name tp_mlp "${IN[@]}" > "$WORK/missing.txt" 2>&1; then
  cat "$WORK/missing.txt"; fail "a missing chip file was not refused"
fi
grep -q "rank 1: error: .*input 'arg1': chip 5: cannot open .*w1.chip5.npy" "$WORK/missing.txt" ||
  { cat "$WORK/missing.txt"; fail "the missing file is not named by rank 1"; }
if "$RUN" "$WORK/p.mpc" --name tp_mlp --input=arg0=@"$WORK/in/x{c}.npy" "${IN[@]:1}" \
     > "$WORK/sharded.txt" 2>&1; then
  fail "per-chip files for a replicated input were accepted"
fi
grep -q "input 'arg0': the plan's shard of it is replicate, not pre-sharded" "$WORK/sharded.txt" ||
  { cat "$WORK/sharded.txt"; fail "no refusal naming arg0"; }
echo "PASS"
