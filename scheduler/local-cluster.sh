#!/usr/bin/env bash
# Start a tokq (Ballista) scheduler and N executors on 127.0.0.1; Ctrl-C stops them all.
#   scheduler/local-cluster.sh [N=2] [SCHEDULER_PORT=50050]
# Then: tokq run --cluster df://127.0.0.1:$SCHEDULER_PORT queries/quickstart.sql
set -euo pipefail
N="${1:-2}"
PORT="${2:-50050}"
TOKQ="${TOKQ:-${CARGO_TARGET_DIR:-$HOME/.cache/tokq-target}/release/tokq}"
if [ ! -x "$TOKQ" ]; then
  echo "local-cluster.sh: no tokq binary at $TOKQ; build it (cargo test --release --no-run) or set TOKQ=/path/to/tokq" >&2
  exit 1
fi
# A port something already listens on would make the check below count another cluster's executors.
in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for p in "$PORT" $(for i in $(seq 1 "$N"); do echo $((PORT + 10 * i + 1)); done); do
  if in_use "$p"; then
    echo "local-cluster.sh: port $p on 127.0.0.1 is in use (another cluster?); stop it, or give another port: local-cluster.sh $N $((PORT + 1000))" >&2
    exit 1
  fi
done
LOGS="${LOGS:-$(mktemp -d -t tokq-cluster-XXXX)}"
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

"$TOKQ" scheduler --bind-host 127.0.0.1 --bind-port "$PORT" 2>"$LOGS/scheduler.log" &
pids+=($!)
for i in $(seq 1 "$N"); do
  flight=$((PORT + 10 * i + 1))
  mkdir -p "$LOGS/work$i"
  "$TOKQ" executor --scheduler-host 127.0.0.1 --scheduler-port "$PORT" --bind-host 127.0.0.1 \
    --bind-port "$flight" --work-dir "$LOGS/work$i" 2>"$LOGS/executor$i.log" &
  pids+=($!)
done
# Started means every executor is registered, not merely launched.
for _ in $(seq 1 100); do
  for p in "${pids[@]}"; do
    kill -0 "$p" 2>/dev/null || { echo "local-cluster.sh: a process exited; see $LOGS/*.log" >&2; tail -n 3 "$LOGS"/*.log >&2; exit 1; }
  done
  n=$( (exec 3<>"/dev/tcp/127.0.0.1/$PORT" && printf 'GET /tokq/executors HTTP/1.0\r\n\r\n' >&3 && tail -n 1 <&3) 2>/dev/null || true)
  [ "$n" = "$N" ] && break
  sleep 0.2
done
[ "$n" = "$N" ] || { echo "local-cluster.sh: $N executors did not register in 20 s; see $LOGS/*.log" >&2; exit 1; }
echo "scheduler df://127.0.0.1:$PORT with $N executors; logs in $LOGS; Ctrl-C to stop"
wait
