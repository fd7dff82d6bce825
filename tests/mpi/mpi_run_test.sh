#!/usr/bin/env bash
# meshplan-run under mpirun: a tensor-parallel MLP on a T3000 over 4 ranks gives the in-process
# run's output byte for byte and passes --check; rank 0 alone prints; ranks whose plan caches
# hold different plans under the same name refuse to run.
#   mpi_run_test.sh "MPIRUN..." MESHPLAN-COMPILE MESHPLAN-RUN SOURCE_DIR WORK_DIR
set -euo pipefail
read -r -a MPIRUN <<< "$1"
COMPILE=$2 RUN=$3 SRC=$4 WORK=$5
rm -rf "$WORK" && mkdir -p "$WORK"
fail() { echo "FAIL: $*"; exit 1; }
MODEL="$SRC/examples/models/tp_mlp_t3k.json"
"$COMPILE" "$MODEL" -o "$WORK/a.mpc" --device n300 --policy greedy > /dev/null
"$COMPILE" "$MODEL" -o "$WORK/b.mpc" --device n300 --policy dram > /dev/null

"$RUN" "$WORK/a.mpc" --name tp_mlp_t3k --mesh t3k --output=@"$WORK/ref.npy" > "$WORK/ref.txt"
for n in 2 4; do
  "${MPIRUN[@]}" -np $n "$RUN" "$WORK/a.mpc" --name tp_mlp_t3k --mesh t3k --check \
    --output=@"$WORK/mpi$n.npy" > "$WORK/mpi$n.txt" 2> "$WORK/mpi$n.err" ||
    { cat "$WORK/mpi$n.txt" "$WORK/mpi$n.err"; fail "$n ranks: meshplan-run failed"; }
  cat "$WORK/mpi$n.txt" "$WORK/mpi$n.err"
  grep -q "check: .*PASS" "$WORK/mpi$n.txt" || fail "$n ranks: no passing check"
  [[ $(grep -c "^check:" "$WORK/mpi$n.txt") == 1 ]] || fail "$n ranks: more than one rank printed"
  [[ $(grep -c "^rank .* of $n: chips" "$WORK/mpi$n.err") == "$n" ]] || fail "$n ranks: rank lines"
  cmp "$WORK/ref.npy" "$WORK/mpi$n.npy" || fail "$n ranks: output differs from the in-process run"
  # The simulated times are the in-process ones.
  diff <(grep "chip (" "$WORK/ref.txt") <(grep "chip (" "$WORK/mpi$n.txt") ||
    fail "$n ranks: per-chip simulated times differ"
done

# Rank 0 maps a.mpc, rank 1 b.mpc: the same name, another plan (key).
if "${MPIRUN[@]}" -np 1 "$RUN" "$WORK/a.mpc" --name tp_mlp_t3k : \
     -np 1 "$RUN" "$WORK/b.mpc" --name tp_mlp_t3k > "$WORK/mix.txt" 2>&1; then
  cat "$WORK/mix.txt"; fail "different plans on the ranks were not refused"
fi
cat "$WORK/mix.txt"
grep -q "every rank must map the same plan cache" "$WORK/mix.txt" || fail "no key mismatch error"
echo "PASS"
