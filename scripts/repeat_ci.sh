#!/usr/bin/env bash
# Runs CI as it runs after a submission, several times in a row: each run in a fresh clone of one commit,
# `CI=true bash .ci/run`, optionally beside two busy processes that hold both cores. Prints one table row
# per run (date, commit, load, passed / failed, duration) and keeps each run's log; stops at the first
# failure (a flaky test is a bug: the log is what to read).
#
#   bash scripts/repeat_ci.sh [--runs N] [--busy] [--commit REV] [--logs DIR]
#
# The clones go under DIR (default /tmp/rynn_repeat_ci) beside a link to ../shared, as CI lays them.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=5 BUSY=0 COMMIT=HEAD LOGS=/tmp/rynn_repeat_ci
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --busy) BUSY=1; shift ;;
    --commit) COMMIT=$2; shift 2 ;;
    --logs) LOGS=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--busy] [--commit REV] [--logs DIR]" >&2; exit 2 ;;
  esac
done
SHA=$(git -C "$ROOT" rev-parse --short "$COMMIT")
mkdir -p "$LOGS"
[[ -e $LOGS/shared || ! -d $ROOT/../shared ]] || ln -s "$(cd "$ROOT/../shared" && pwd)" "$LOGS/shared"

busy=()
stop_busy() { [[ ${#busy[@]} -eq 0 ]] || kill "${busy[@]}" 2>/dev/null || true; }
trap stop_busy EXIT INT TERM
if [[ $BUSY == 1 ]]; then
  for _ in 1 2; do python3 -c 'while True: pass' & busy+=($!); done
fi

echo "| date | commit | beside | result | duration |"
echo "| --- | --- | --- | --- | --- |"
for run in $(seq 1 "$RUNS"); do
  clone=$LOGS/clone_$run log=$LOGS/run_${SHA}_$run.log
  rm -rf "$clone"
  git clone -q "$ROOT" "$clone" && git -C "$clone" checkout -q "$SHA"
  started=$(date +%s) day=$(date -u +%Y-%m-%dT%H:%MZ)
  status=0
  (cd "$clone" && CI=true bash .ci/run </dev/null) >"$log" 2>&1 || status=$?
  seconds=$(( $(date +%s) - started ))
  summary=$(grep -E '^=+ .*(passed|failed).* in ' "$log" | tail -1 | sed -E 's/^=+ //; s/ =+$//; s/ in [0-9.]+s.*//')
  beside=$([[ $BUSY == 1 ]] && echo "two busy loops" || echo "idle")
  echo "| $day | \`$SHA\` | $beside | ${summary:-no pytest summary} (exit $status) | $((seconds / 60)) min $((seconds % 60)) s |"
  rm -rf "$clone"
  [[ $status == 0 ]] || { echo "run $run failed: $log" >&2; exit 1; }
done
