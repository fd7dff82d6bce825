#!/usr/bin/env bash
# meshplan-server under mpirun (2 and 4 ranks): ranks mapping different caches are refused; a
# TCP client's mesh-plan requests come back byte-identical to an in-process run, and quit stops
# every rank; SIGTERM to rank 0 stops the job cleanly; a follower that dies ends the server
# (non-zero, bounded time), never a hang.
#   mpi_server_test.sh "MPIRUN..." MESHPLAN-COMPILE MESHPLAN-SERVER CLIENT SOURCE_DIR WORK_DIR
set -euo pipefail
read -r -a MPIRUN <<< "$1"
COMPILE=$2 SERVER=$3 CLIENT=$4 SRC=$5 WORK=$6
rm -rf "$WORK" && mkdir -p "$WORK"
fail() { echo "FAIL: $*"; for f in "$WORK"/*.out "$WORK"/*.err; do echo "== $f"; cat "$f"; done; exit 1; }
"$COMPILE" "$SRC/examples/models/tp_mlp_t3k.json" -o "$WORK/plans.mpc" --device n300 > /dev/null
"$COMPILE" "$SRC/examples/models/tp_mlp_t3k.json" -o "$WORK/other.mpc" --device n300 \
  --policy dram > /dev/null

# Ranks mapping different caches (the same name, another plan) are refused before serving.
if timeout 60 "${MPIRUN[@]}" -np 1 "$SERVER" "$WORK/plans.mpc" --port 0 : \
     -np 1 "$SERVER" "$WORK/other.mpc" --port 0 > "$WORK/mix.out" 2> "$WORK/mix.err"; then
  fail "different caches on the ranks were not refused"
fi
grep -q "every rank must map the same plan cache and devices" "$WORK/mix.err" ||
  fail "no mismatch error"

# start NAME RANKS: the server in the background; sets PID (mpirun) and PORT.
start() {
  "${MPIRUN[@]}" -np "$2" "$SERVER" "$WORK/plans.mpc" --port 0 --remote-quit \
    --shutdown-timeout 5 > "$WORK/$1.out" 2> "$WORK/$1.err" &
  PID=$!
  for _ in $(seq 600); do
    PORT=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$WORK/$1.out")
    [[ -n $PORT ]] && return 0
    kill -0 $PID 2> /dev/null || fail "$1: the server ended before listening"
    sleep 0.1
  done
  fail "$1: not listening after 60 s"
}
# finish NAME SECONDS: waits at most SECONDS for the server to end; sets RC and TOOK.
finish() {
  local t0=$SECONDS
  for _ in $(seq $(($2 * 10))); do
    kill -0 $PID 2> /dev/null || break
    sleep 0.1
  done
  kill -0 $PID 2> /dev/null && { kill -KILL $PID; fail "$1: still running after $2 s"; }
  RC=0; wait $PID || RC=$?
  TOOK=$((SECONDS - t0))
  echo "$1: ended with $RC after ${TOOK} s"
}

for n in 2 4; do
  start quit$n $n
  "$CLIENT" "$PORT" "$WORK/plans.mpc" tp_mlp_t3k 3 quit || fail "$n ranks: client"
  finish quit$n 30
  [[ $RC == 0 ]] || fail "$n ranks: exit $RC after quit"
  grep -q "^mpi: 1 mesh plans run over $n ranks" "$WORK/quit$n.out" || fail "$n ranks: no mpi line"
  grep -q "^done: 3 served, 0 failed" "$WORK/quit$n.out" || fail "$n ranks: not 3 served"
  [[ $(grep -c "follows rank 0" "$WORK/quit$n.err") == $((n - 1)) ]] || fail "$n ranks: followers"
done

# A pre-sharded plan (inputs of one piece per chip) over stdin with seeded inputs: the same
# outputs (digests) as the in-process server.
"$COMPILE" "$SRC/examples/models/tp_mlp.mlir" -o "$WORK/pre.mpc" --presharded > /dev/null
printf 'run tp_mlp random 5\nquit\n' > "$WORK/pre.txt"
digests() { sed -n 's/^ok #0 tp_mlp device_us=\([^ ]*\) host_us=[^ ]* \(.*\)$/\1 \2/p' "$1"; }
"$SERVER" "$WORK/pre.mpc" < "$WORK/pre.txt" > "$WORK/pre_local.out"
timeout 120 "${MPIRUN[@]}" -np 4 "$SERVER" "$WORK/pre.mpc" < "$WORK/pre.txt" \
  > "$WORK/pre_mpi.out" 2> "$WORK/pre_mpi.err" || fail "pre-sharded: server under mpirun"
[[ -n $(digests "$WORK/pre_local.out") ]] || fail "pre-sharded: no local reply"
[[ $(digests "$WORK/pre_local.out") == $(digests "$WORK/pre_mpi.out") ]] ||
  fail "pre-sharded: outputs differ from the in-process server"

# SIGTERM to rank 0 (as a service manager would send it): every rank ends, exit 0.
start term 2
"$CLIENT" "$PORT" "$WORK/plans.mpc" tp_mlp_t3k 1 || fail "term: client"
kill -TERM "$(sed -n 's/^mpi: .* rank 0 (pid \([0-9]*\)) serves$/\1/p' "$WORK/term.out")"
finish term 30
[[ $RC == 0 ]] || fail "term: exit $RC after SIGTERM to rank 0"
grep -q "^done: 1 served" "$WORK/term.out" || fail "term: no final report"

# A follower killed: the job ends with an error, it does not hang.
start die 2
kill -KILL "$(sed -n 's/.*rank 1 of 2 (pid \([0-9]*\)) follows rank 0/\1/p' "$WORK/die.err")"
"$CLIENT" "$PORT" "$WORK/plans.mpc" tp_mlp_t3k 1 > /dev/null 2>&1 || true
finish die 60
[[ $RC != 0 ]] || fail "die: exit 0 after a rank was killed"
cat "$WORK/die.err"
echo "PASS"
