"""Scaling of the FineWeb recipe (`queries/fineweb.sql`: FineWeb's filter cascade, kept rows and
rejects with reasons) on >= 1 GB: a local run, a cluster of 1 executor and a cluster of
2 executors, all on this machine and on 127.0.0.1. Each executor has one task slot (--vcores 1),
so the 2/1 ratio is what a second executor adds; the local run uses every core.

The input is the largest corpus in ../shared/corpora (Wikipedia, 62 MB of JSONL), copied into
shards with fresh ids until it reaches --gb. Prints wall time, MB/s, the peak RSS of every
process (client, scheduler, executors) and the 2/1 ratio, and checks that the three runs wrote
the same files byte for byte.

    python tests/bench/scaling.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared --gb 1
"""
import argparse
import gzip
import hashlib
import json
import os
import pathlib
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request

RECIPE = pathlib.Path(__file__).resolve().parents[2] / "queries" / "fineweb.sql"


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


def digest(dirs):
    h = {}
    for d in dirs:
        for f in sorted(d.iterdir()):
            h[f"{d.name}/{f.name}"] = hashlib.sha256(f.read_bytes()).hexdigest()
    return h


def wait_executors(port: int, n: int):
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}/api/executors", timeout=2).read().decode()
            if body.count('"host"') >= n:
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise SystemExit("executors did not register")


def run_cluster(tokq: str, args, executors: int, out: pathlib.Path, executor_args=()):
    """Runs `args` (a `tokq run` command) on a scheduler and `executors` executors of one task
    slot each, started here on 127.0.0.1 and stopped after; returns the wall time and the peak
    RSS of every process."""
    logs = tempfile.mkdtemp(prefix="tokq-cluster-logs-")
    port = free_port()
    procs = [subprocess.Popen([tokq, "scheduler", "--bind-port", str(port)], stderr=open(f"{logs}/scheduler.log", "w"))]
    for i in range(executors):
        work_dir = pathlib.Path(logs) / f"work{i}"
        work_dir.mkdir()
        procs.append(subprocess.Popen(
            [tokq, "executor", "--scheduler-host", "127.0.0.1", "--scheduler-port", str(port),
             "--bind-port", str(free_port()), "--bind-grpc-port", str(free_port()), "--vcores", "1",
             "--work-dir", str(work_dir), *executor_args], stderr=open(f"{logs}/executor{i}.log", "w")))
    try:
        wait_executors(port, executors)
        wall, rss = run_client(list(args) + ["--cluster", f"df://127.0.0.1:{port}"], out)
        peaks = {"client": rss, "scheduler": peak_rss_mib(procs[0].pid)}
        for i, p in enumerate(procs[1:]):
            peaks[f"executor {i}"] = peak_rss_mib(p.pid)
        return wall, peaks
    finally:
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(logs, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--work", help="folder for input and outputs (default: a temporary one)")
    a = ap.parse_args()
    work = pathlib.Path(a.work or tempfile.mkdtemp(prefix="tokq-scaling-"))
    inp = work / "in"
    if not inp.exists():
        size = make_input(pathlib.Path(a.shared), inp, a.gb, a.shards)
    else:
        size = sum(f.stat().st_size for f in inp.iterdir())
    mb = size / 1e6
    out, rej = work / "out", work / "rejects"
    base = [a.tokq, "run", str(RECIPE), "--quiet", "--set", f"input={inp}/*.jsonl",
            "--set", f"output={out}/", "--set", f"rejects={rej}/"]
    print(f"input: {mb:.0f} MB in {a.shards} shards under {inp}")
    results, digests = [], []

    def clear():
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(rej, ignore_errors=True)

    clear()
    wall, rss = run_client(base + ["--partitions", str(os.cpu_count())], out)
    results.append(("local", wall, {"tokq run": rss}))
    digests.append(digest([out, rej]))

    for executors in (1, 2):
        clear()
        wall, peaks = run_cluster(a.tokq, base + ["--partitions", str(a.shards)], executors, out)
        results.append((f"cluster, {executors} executor{'s' if executors > 1 else ''}", wall, peaks))
        digests.append(digest([out, rej]))

    print("| run | wall s | MB/s | peak RSS MiB |\n|---|---:|---:|---|")
    for name, wall, peaks in results:
        rss = ", ".join(f"{k} {v:.0f}" for k, v in peaks.items())
        print(f"| {name} | {wall:.1f} | {mb / wall:.1f} | {rss} |")
    one, two = results[1][1], results[2][1]
    print(f"2-executor / 1-executor speedup: {one / two:.2f}x")
    same = all(d == digests[0] for d in digests)
    print(f"identical files in all three runs: {same} ({len(digests[0])} files)")
    if not same:
        raise SystemExit("outputs differ")


if __name__ == "__main__":
    main()
