"""Scaling of a recipe (default `queries/pretrain.sql`, the whole job) across partitions and
executors on one machine: where cores idle, statement by statement.

The input is Wikipedia's sample (../shared/corpora, 62 MB of JSONL) copied into --shards files
until it reaches --gb, each copy with fresh ids and its words shifted (`pretrain.py`'s
`distinct_copy`), so dedup keeps them and every stage sees real work. Then:
- a local run at each of --partitions (e.g. 1,2), with --memory-limit when given;
- a local Ballista cluster (scheduler and executors on 127.0.0.1) of each of --executors, every
  executor with one task slot, at as many partitions as the largest --partitions; with --tls, each
  such cluster once more with TLS on every connection (certificates from scheduler/certs.sh), to
  show what TLS costs.
For each run: wall, MB/s, speed-up and efficiency against the first run (efficiency: speed-up over
the cores it could use), the peak RSS of every process; per statement (from --stats-json): seconds
and cores busy (CPU seconds over wall seconds, local runs). Every run's output and rejects must
hold the same rows (an order-free digest over every column); the script fails if they do not.

    python tests/bench/scaling.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared \\
        --gb 0.25 --partitions 1,2 --executors 2
"""
import argparse
import gzip
import hashlib
import json
import os
import pathlib
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Words every copy keeps: Gopher's stop words, so that copies pass its stop-word rule as the
# original does.
KEPT = {"the", "be", "to", "of", "and", "that", "have", "with"}


def distinct_copy(copy: int, text: str) -> str:
    """Copy `copy` of a text with the letters of its non-stop words shifted by `copy` (copy 0 is
    the original): the copies keep the text's shape (lines, words, lengths, punctuation, stop
    words) but are not duplicates (26 distinct copies, 1.6 GB of Wikipedia's sample), so dedup
    keeps them and the stages after it see as much text as they would on a real corpus."""
    k = copy % 25 + 1 if copy else 0
    if not k:
        return text
    lower = "abcdefghijklmnopqrstuvwxyz"
    table = str.maketrans(lower + lower.upper(), lower[k:] + lower[:k] + (lower[k:] + lower[:k]).upper())
    return " ".join(w if w.lower() in KEPT else w.translate(table) for w in text.split(" "))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def make_input(shared: pathlib.Path, out: pathlib.Path, gb: float, shards: int, vary=None) -> int:
    """Wikipedia's sample copied into `shards` JSONL files until `gb`, each copy with fresh ids;
    `vary(copy, text)`, when given, rewrites each copy's text."""
    src = shared / "corpora" / "wikipedia-en-2015" / "wiki_en_2015_sample.jsonl.gz"
    with gzip.open(src, "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f if line.strip()]
    out.mkdir(parents=True)
    target = int(gb * 1e9)
    per_shard = target // shards + 1
    total, copy = 0, 0
    for s in range(shards):
        written = 0
        with open(out / f"shard-{s:03}.jsonl", "w", encoding="utf-8") as f:
            while written < per_shard:
                for d in docs:
                    text = vary(copy, d["text"]) if vary else d["text"]
                    line = json.dumps({"id": f"{d['id']}-c{copy}", "text": text}) + "\n"
                    f.write(line)
                    written += len(line.encode())
                    if written >= per_shard:
                        break
                copy += 1
        total += written
    return total


def peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def run_client(args, out_dir: pathlib.Path):
    """Runs a command; returns its wall time and peak RSS in MiB. The peak comes from GNU time,
    whose child is forked from a small process: Linux carries a process's peak RSS across exec
    into the child's rusage, so `wait4` on a child of this Python process reports at least this
    process's own RSS at the fork (hundreds of MB once the input is built)."""
    if not shutil.which("/usr/bin/time"):
        raise SystemExit("the peak RSS is measured with GNU time: apt-get install time")
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        start = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name, *args], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
        wall = time.perf_counter() - start
        if p.returncode != 0:
            raise SystemExit(f"tokq failed: {p.stderr.decode()}")
        return wall, int(rss.read().split()[-1]) / 1024


def wait_executors(port: int, n: int, ca=None):
    deadline = time.time() + 60
    scheme, context = ("https", ssl.create_default_context(cafile=ca)) if ca else ("http", None)
    while time.time() < deadline:
        try:
            body = urllib.request.urlopen(f"{scheme}://127.0.0.1:{port}/api/executors", timeout=2, context=context).read().decode()
            if body.count('"host"') >= n:
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise SystemExit("executors did not register")


def run_cluster(tokq: str, args, executors: int, out: pathlib.Path, executor_args=(), certs=None):
    """Runs `args` (a `tokq run` command) on a scheduler and `executors` executors of one task
    slot each, started here on 127.0.0.1 and stopped after; returns the wall time and the peak
    RSS of every process. With `certs` (a folder scheduler/certs.sh made for 127.0.0.1), every
    connection speaks TLS."""
    logs = tempfile.mkdtemp(prefix="tokq-cluster-logs-")
    port = free_port()
    tls, ca = [], None
    if certs:
        ca = str(certs / "ca.pem")
        tls = ["--tls-ca", ca, "--tls-cert", str(certs / "127.0.0.1.pem"), "--tls-key", str(certs / "127.0.0.1.key")]
    executor_args = [*executor_args, *tls]
    procs = [subprocess.Popen([tokq, "scheduler", "--bind-port", str(port), *tls], stderr=open(f"{logs}/scheduler.log", "w"))]
    for i in range(executors):
        work_dir = pathlib.Path(logs) / f"work{i}"
        work_dir.mkdir()
        procs.append(subprocess.Popen(
            [tokq, "executor", "--scheduler-host", "127.0.0.1", "--scheduler-port", str(port),
             "--bind-port", str(free_port()), "--bind-grpc-port", str(free_port()), "--vcores", "1",
             "--work-dir", str(work_dir), *executor_args], stderr=open(f"{logs}/executor{i}.log", "w")))
    try:
        wait_executors(port, executors, ca)
        wall, rss = run_client(list(args) + ["--cluster", f"df://127.0.0.1:{port}"] + (["--tls-ca", ca] if ca else []), out)
        peaks = {"client": rss, "scheduler": peak_rss_mib(procs[0].pid)}
        for i, p in enumerate(procs[1:]):
            peaks[f"executor {i}"] = peak_rss_mib(p.pid)
        return wall, peaks
    finally:
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(logs, ignore_errors=True)


def rows_digest(folder: pathlib.Path) -> str:
    """Row count and an order-free digest of every row of a tokq output folder: each row hashed
    over all its columns, the sorted row hashes hashed again."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not folder.exists():
        return "absent"
    table = pq.read_table(folder)
    columns = []
    for name in sorted(table.column_names):
        col = table.column(name).combine_chunks()
        if pa.types.is_list(col.type) and pa.types.is_integer(col.type.value_type):
            values = np.asarray(col.values.to_numpy(zero_copy_only=False), dtype=np.int64)
            offsets = col.offsets.to_numpy()
            columns.append([values[offsets[i]:offsets[i + 1]].tobytes() for i in range(len(col))])
        else:
            columns.append([repr(v).encode() for v in col.to_pylist()])
    rows = sorted(hashlib.sha256(b"\x1f".join(cells)).digest() for cells in zip(*columns))
    return f"{len(rows)} rows {hashlib.sha256(b''.join(rows)).hexdigest()[:16]}"


def declared(tokq: str, recipe: str) -> set:
    """The parameters a recipe takes: its PARAMETERS (`tokq params`), or the `${name}`s it uses."""
    p = subprocess.run([tokq, "params", recipe], capture_output=True, text=True)
    if p.returncode == 0:
        return {line.split()[0] for line in p.stdout.splitlines() if line and not line[0].isspace()}
    text = pathlib.Path(recipe).read_text()
    return {part.split("}")[0].split(":-")[0] for part in text.split("${")[1:]}


def statements(stats: pathlib.Path):
    s = json.loads(stats.read_text())
    return {st["number"]: (f"{pathlib.Path(st['file']).name}:{st['line']}", st["seconds"], (st.get("cpu") or {}).get("cores_busy"))
            for st in s["statements"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--recipe", default=str(ROOT / "queries" / "pretrain.sql"))
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--partitions", default="1,2", help="local runs, one per count")
    ap.add_argument("--executors", default="", help="cluster runs, one per executor count (one slot each)")
    ap.add_argument("--tls", action="store_true", help="run each cluster once more with TLS on every connection")
    ap.add_argument("--memory-limit", help="--memory-limit of the local runs, e.g. 2G")
    ap.add_argument("--work", help="folder for input and outputs (default: a temporary one, removed after)")
    a = ap.parse_args()
    a.shared = str(pathlib.Path(a.shared).resolve())
    work = pathlib.Path(a.work or tempfile.mkdtemp(prefix="tokq-scaling-"))
    inp = work / "in"
    if not inp.exists():
        make_input(pathlib.Path(a.shared), inp, a.gb, a.shards, distinct_copy)
    mb = sum(f.stat().st_size for f in inp.iterdir()) / 1e6
    sets = {"input": f"{inp}/*.jsonl", "output": f"{work}/o/", "rejects": f"{work}/r/", "work": f"{work}/w/",
            "tokenizer": f"{a.shared}/tokenizers/gpt2/tokenizer.json", "eos": "<|endoftext|>"}
    base = [a.tokq, "run", a.recipe, "--quiet"]
    for k, v in sets.items():
        if k in declared(a.tokq, a.recipe):
            base += ["--set", f"{k}={v}"]
    parts = [int(p) for p in a.partitions.split(",") if p]
    executors = [int(e) for e in a.executors.split(",") if e]
    cores = os.cpu_count() or 1
    print(f"input: {mb:.0f} MB in {a.shards} files; recipe {a.recipe}; {cores} cores")

    def clear():
        for d in ("o", "r", "w"):
            shutil.rmtree(work / d, ignore_errors=True)

    runs = []
    for p in parts:
        clear()
        stats = work / f"stats-{p}.json"
        extra = ["--partitions", str(p), "--stats-json", str(stats)] + (["--memory-limit", a.memory_limit] if a.memory_limit else [])
        wall, rss = run_client(base + extra, work)
        runs.append((f"local, {p} partition{'s' if p > 1 else ''}", min(p, cores), wall, {"tokq": rss}, statements(stats),
                     (rows_digest(work / "o"), rows_digest(work / "r"))))
    certs = None
    if a.tls:
        certs = work / "certs"
        subprocess.run(["bash", str(ROOT / "scheduler" / "certs.sh"), str(certs), "127.0.0.1,localhost"], check=True, stdout=subprocess.DEVNULL)
    for e in executors:
        for tls in ([None, certs] if certs else [None]):
            clear()
            stats = work / f"stats-x{e}.json"
            wall, peaks = run_cluster(a.tokq, base + ["--partitions", str(max(parts)), "--stats-json", str(stats)], e, work, certs=tls)
            runs.append((f"cluster, {e} executor{'s' if e > 1 else ''} x 1 slot{', TLS' if tls else ''}", min(e, cores), wall, peaks,
                         statements(stats), (rows_digest(work / "o"), rows_digest(work / "r"))))

    first_wall, first_cores = runs[0][2], runs[0][1]
    print("\n| run | wall s | MB/s | speed-up | efficiency | peak RSS MiB |\n|---|---:|---:|---:|---:|---|")
    for name, used, wall, peaks, _, _ in runs:
        speedup = first_wall / wall
        rss = ", ".join(f"{k} {v:.0f}" for k, v in peaks.items())
        print(f"| {name} | {wall:.1f} | {mb / wall:.1f} | {speedup:.2f}x | {speedup * first_cores / used:.0%} | {rss} |")

    print("\nper statement (seconds, and cores busy in local runs):")
    header = "| statement | " + " | ".join(r[0] for r in runs) + " |"
    print(header + "\n|---|" + "---:|" * len(runs))
    numbers = sorted(set().union(*(r[4].keys() for r in runs)))
    for n in numbers:
        sql = next(r[4][n][0] for r in runs if n in r[4])
        cells = []
        for r in runs:
            _, secs, busy = r[4].get(n, ("", float("nan"), None))
            cells.append(f"{secs:.2f}" + (f" ({busy:.2f})" if busy is not None else ""))
        if max(r[4].get(n, ("", 0.0, None))[1] for r in runs) >= 0.01 * first_wall:
            print(f"| {n} ({sql}) | " + " | ".join(cells) + " |")

    digests = {r[5] for r in runs}
    print(f"\nsame rows in every run: {len(digests) == 1} ({runs[0][5][0]}; rejects {runs[0][5][1]})")
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    if len(digests) != 1:
        raise SystemExit("outputs differ: " + "; ".join(f"{r[0]}: {r[5]}" for r in runs))


if __name__ == "__main__":
    main()
