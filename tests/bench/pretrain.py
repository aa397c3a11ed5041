"""The whole pretraining job, tokq against datatrove, per core.

tokq runs `queries/pretrain.sql` (read -> clean_text -> FineWeb cascade -> exact + MinHash dedup ->
tokenize -> pack to 2048 -> Parquet, rejects and accounting) with the GPT-2 tokenizer file from
../shared. datatrove runs its equivalent chain, one task and one worker per stage:
JsonlReader -> GopherRepetition -> GopherQuality -> C4 (filter_no_terminal_punct=False) ->
FineWebQuality -> JsonlWriter; MinhashDedupSignature; MinhashDedupBuckets; MinhashDedupCluster;
MinhashDedupFilter -> DocumentTokenizer (same tokenizer file, no shuffling).

Runs, in one script:
1. both on the same subset (--dt-mb of the input, since datatrove's cascade does ~0.15 MB/s),
   tokq pinned to one core: per-stage and end-to-end MB/s and the ratio;
2. tokq alone on the whole input (>= 1 GB) on one core with --memory-limit 2G: MB/s, peak RSS
   and seconds per statement;
3. tokq on a local cluster of 1 and then 2 executors (one task slot each, 2 GB memory pool):
   wall time, the 2/1 ratio, and whether the outputs are the same rows.

    python tests/bench/pretrain.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared --gb 1
"""
import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from scaling import distinct_copy, make_input, run_client, run_cluster  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
RECIPE = ROOT / "queries" / "pretrain.sql"


def pinned(args):
    return (["taskset", "-c", "0"] if shutil.which("taskset") else []) + args


def tokq_args(a, inp, work, extra=()):
    return [a.tokq, "run", str(RECIPE), "--quiet", "--set", f"input={inp}", "--set", f"work={work}/w/",
            "--set", f"rejects={work}/r/", "--set", f"output={work}/o/",
            "--set", f"tokenizer={a.shared}/tokenizers/gpt2/tokenizer.json", "--set", "eos=<|endoftext|>", *extra]


def output_rows(tokq: str, out: pathlib.Path) -> str:
    """The packed rows of an output, order-free: count and a sum over their lineage."""
    q = (f"SELECT count(*) AS packed_rows, sum(cardinality(input_ids)) AS ids "
         f"FROM read_parquet('{out}/')")
    return subprocess.run([tokq, "run", "-c", q], check=True, capture_output=True, text=True).stdout


def datatrove_chain(subset: pathlib.Path, tokenizer: str, tmp: pathlib.Path):
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup.minhash import (MinhashDedupBuckets, MinhashDedupCluster, MinhashDedupFilter,
                                                  MinhashDedupSignature)
    from datatrove.pipeline.filters import C4QualityFilter, FineWebQualityFilter, GopherQualityFilter, GopherRepetitionFilter
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.tokens import DocumentTokenizer
    from datatrove.pipeline.writers import JsonlWriter

    def d(name):
        return str(tmp / name)

    def filtered():
        return JsonlReader(d("filtered"))

    stages = [
        ("filters (cascade)", 1, [JsonlReader(str(subset.parent), glob_pattern=subset.name), GopherRepetitionFilter(),
                                  GopherQualityFilter(), C4QualityFilter(filter_no_terminal_punct=False),
                                  FineWebQualityFilter(), JsonlWriter(d("filtered"))]),
        ("minhash 1 signatures", 1, [filtered(), MinhashDedupSignature(d("sigs"))]),
        ("minhash 2 buckets", 14, [MinhashDedupBuckets(d("sigs"), d("buckets"))]),
        ("minhash 3 cluster", 1, [MinhashDedupCluster(d("buckets"), d("remove"))]),
        ("minhash 4 filter + tokenize", 1, [filtered(), MinhashDedupFilter(d("remove")),
                                            DocumentTokenizer(d("tokens"), tokenizer, eos_token="<|endoftext|>",
                                                              shuffle_documents=False)]),
    ]
    times = []
    for name, tasks, steps in stages:
        start = time.perf_counter()
        LocalPipelineExecutor(steps, tasks=tasks, workers=1, logging_dir=d(f"logs-{len(times)}")).run()
        times.append((name, time.perf_counter() - start))
    return times


def statement_seconds(stats: pathlib.Path):
    s = json.loads(stats.read_text())
    return [(st["number"], st["sql"].split("\n")[0][:60], st["seconds"]) for st in s["statements"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--dt-mb", type=float, default=20.0, help="the subset both run on")
    ap.add_argument("--skip-cluster", action="store_true")
    a = ap.parse_args()
    a.shared = str(pathlib.Path(a.shared).resolve())
    work = pathlib.Path(tempfile.mkdtemp(prefix="tokq-pretrain-"))
    try:
        inp = work / "in"
        size = make_input(pathlib.Path(a.shared), inp, a.gb, 4, distinct_copy)
        mb = size / 1e6
        subset = work / "subset" / "docs.jsonl"
        subset.parent.mkdir()
        with open(inp / "shard-000.jsonl", "rb") as src, open(subset, "wb") as dst:
            for line in src:
                dst.write(line)
                if dst.tell() >= a.dt_mb * 1e6:
                    break
        sub_mb = subset.stat().st_size / 1e6
        print(f"input: {mb:.0f} MB in 4 files; subset: {sub_mb:.1f} MB")

        # 1. The same subset, one core each.
        t_sub, _ = run_client(pinned(tokq_args(a, subset, work / "tq-sub", ["--partitions", "1"])), work)
        dt = datatrove_chain(subset, f"{a.shared}/tokenizers/gpt2/tokenizer.json", work / "dt")
        dt_total = sum(t for _, t in dt)
        print(f"\nsame {sub_mb:.1f} MB, one core:")
        for name, t in dt:
            print(f"  datatrove {name:<32} {t:8.1f} s  {sub_mb / t:8.3f} MB/s")
        print(f"  datatrove {'whole chain':<32} {dt_total:8.1f} s  {sub_mb / dt_total:8.3f} MB/s")
        print(f"  tokq      {'queries/pretrain.sql':<32} {t_sub:8.1f} s  {sub_mb / t_sub:8.3f} MB/s  "
              f"-> tokq is {dt_total / t_sub:.0f}x datatrove per core")

        # 2. The whole input, one core, bounded memory.
        stats = work / "one-core.json"
        t_one, rss = run_client(pinned(tokq_args(a, f"{inp}/*.jsonl", work / "tq-one",
                                                 ["--partitions", "1", "--memory-limit", "2G", "--stats-json", str(stats)])), work)
        print(f"\ntokq, {mb:.0f} MB, one core, --memory-limit 2G: {t_one:.1f} s, {mb / t_one:.1f} MB/s, peak RSS {rss:.0f} MiB")
        for n, sql, secs in statement_seconds(stats):
            if secs >= 0.01 * t_one:
                print(f"  statement {n:2} {secs:7.1f} s  {sql}")
        print(f"  per core vs datatrove's chain on the subset: {(mb / t_one) / (sub_mb / dt_total):.0f}x")

        # 3. One and two executors.
        if not a.skip_cluster:
            runs = []
            for executors in (1, 2):
                out = work / "tq-cluster"
                shutil.rmtree(out, ignore_errors=True)
                wall, peaks = run_cluster(a.tokq, tokq_args(a, f"{inp}/*.jsonl", out, ["--partitions", "4"]), executors,
                                          work, ["--memory-pool-bytes", str(2 << 30)])
                runs.append((wall, output_rows(a.tokq, out / "o")))
                rss = ", ".join(f"{k} {v:.0f}" for k, v in peaks.items())
                print(f"\ncluster, {executors} executor(s): {wall:.1f} s, {mb / wall:.1f} MB/s; peak RSS MiB: {rss}")
            print(f"2 executors / 1 executor: {runs[0][0] / runs[1][0]:.2f}x; same packed rows: {runs[0][1] == runs[1][1]}")
            print(runs[0][1])
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
