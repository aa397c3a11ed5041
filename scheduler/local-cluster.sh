#!/usr/bin/env bash
# Start a tokq (Ballista) scheduler and N executors on 127.0.0.1; Ctrl-C stops them all.
#   scheduler/local-cluster.sh [N=2] [SCHEDULER_PORT=50050]
# Then: tokq run --cluster df://127.0.0.1:$SCHEDULER_PORT queries/quickstart.sql
set -euo pipefail
N="${1:-2}"
PORT="${2:-50050}"
TOKQ="${TOKQ:-${CARGO_TARGET_DIR:-$HOME/.cache/tokq-target}/release/tokq}"
LOGS="${LOGS:-$(mktemp -d -t tokq-cluster-XXXX)}"
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

"$TOKQ" scheduler --bind-host 127.0.0.1 --bind-port "$PORT" 2>"$LOGS/scheduler.log" &
pids+=($!)
for i in $(seq 1 "$N"); do
  flight=$((PORT + 10 * i + 1)); grpc=$((PORT + 10 * i + 2))
  mkdir -p "$LOGS/work$i"
  "$TOKQ" executor --scheduler-host 127.0.0.1 --scheduler-port "$PORT" --bind-host 127.0.0.1 \
    --bind-port "$flight" --bind-grpc-port "$grpc" --work-dir "$LOGS/work$i" 2>"$LOGS/executor$i.log" &
  pids+=($!)
done
echo "scheduler df://127.0.0.1:$PORT with $N executors; logs in $LOGS; Ctrl-C to stop"
wait
