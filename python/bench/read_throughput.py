"""Read benchmark: packed tokq output into (batch, seq_len) batches, per core, against a flat
uint32 memmap of the same tokens (Megatron-style .bin), in the same run.

    python python/bench/read_throughput.py --tokq ~/.cache/tokq-target/release/tokq \
        --corpus '../shared/corpora/wikipedia-en-2015/*.jsonl.gz'

It packs the corpus once per variant (zstd levels, row-group sizes), then reads each variant with
`tokq.TokqDataset` on one core (pinned, pyarrow single-threaded) and reports tokens/s, MB/s of
Parquet, time to first batch and the ratio to the .bin reference. Files are read once before timing,
so both sides read from the page cache: the numbers are decode cost, not disk speed.
"""

import argparse
import os
import pathlib
import statistics
import subprocess
import tempfile
import time

import numpy as np
import pyarrow as pa

from tokq import TokqDataset, read_manifest

REPO = pathlib.Path(__file__).resolve().parents[2]
DEFAULT_RG = "default"


def pack(tokq, corpus, out, seq_len, options):
    opts = ", ".join(f"'{k}' '{v}'" for k, v in options.items())
    recipe = out.with_suffix(".sql")
    recipe.write_text(
        f"""CREATE VIEW t AS SELECT _source, _row, tokenize(text, 'tiktoken:cl100k_base') AS input_ids
            FROM read_jsonl('{corpus}');
            COPY (SELECT * FROM pack_tokens('t', {seq_len}, 'eos=100257')) TO '{out}/' STORED AS PARQUET
            OPTIONS ({opts});"""
    )
    subprocess.run([tokq, "run", str(recipe), "--quiet"], cwd=REPO, check=True)
    return read_manifest(str(out))


def timed(make_iter, repeats):
    """Best-of and median seconds for a full pass, and the time to the first batch."""
    passes, first = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        it = make_iter()
        batch = next(it)
        first.append(time.perf_counter() - t0)
        tokens = batch.size
        for batch in it:
            tokens += batch.size
        passes.append(time.perf_counter() - t0)
    return min(passes), statistics.median(passes), statistics.median(first), tokens


def tokq_batches(path, batch):
    return (b["input_ids"] for b in TokqDataset(str(path), batch_size=batch, drop_last=True))


def bin_batches(path, seq_len, batch):
    rows = np.memmap(path, dtype=np.uint32, mode="r").reshape(-1, seq_len)
    # A copy per batch, as Megatron's loader makes when it turns a slice into a tensor.
    return (np.array(rows[i : i + batch]) for i in range(0, len(rows) - batch + 1, batch))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--corpus", required=True, help="JSONL glob with a 'text' field")
    ap.add_argument("--seq-len", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)

    variants = [(f"zstd({lvl}) rg {DEFAULT_RG}", {"compression": f"zstd({lvl})"}) for lvl in (1, 3, 9, 22)]
    variants.append((f"uncompressed rg {DEFAULT_RG}", {"compression": "uncompressed"}))
    for kib in (256, 512, 4096, 16384):
        variants.append((f"zstd(3) rg {kib} KiB", {"compression": "zstd(3)", "max_row_group_bytes": str(kib << 10)}))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        results = []
        for i, (label, options) in enumerate(variants):
            out = tmp / f"v{i}"
            t0 = time.perf_counter()
            manifest = pack(args.tokq, args.corpus, out, args.seq_len, options)
            results.append((label, out, manifest, time.perf_counter() - t0))
        # The reference: the same tokens, in the same order, as one flat uint32 file.
        ref = tmp / "tokens.bin"
        with open(ref, "wb") as f:
            for b in TokqDataset(str(results[0][1]), batch_size=256):
                b["input_ids"].tofile(f)
        raw_bytes = ref.stat().st_size
        for _, out, _, _ in results:  # warm the page cache for every variant
            for p in out.iterdir():
                p.read_bytes()
        ref.read_bytes()

        best, median, first, tokens = timed(lambda: bin_batches(ref, args.seq_len, args.batch), args.repeats)
        ref_rate = tokens / best
        print(f"corpus {args.corpus}: {tokens / 1e6:.1f}M tokens, seq_len {args.seq_len}, batch {args.batch}, one core")
        print(f"{'variant':<20} {'size MB':>8} {'ratio':>6} {'row groups':>10} {'Mtok/s':>8} {'(median)':>8} {'MB/s':>7} {'first batch':>11} {'vs .bin':>8} {'write s':>8}")
        print(f"{'.bin memmap':<20} {raw_bytes / 1e6:8.1f} {1.0:6.2f} {'-':>10} {ref_rate / 1e6:8.1f} {tokens / median / 1e6:8.1f} {raw_bytes / best / 1e6:7.0f} {first * 1e3:9.2f}ms {1.0:8.2f} {'-':>8}")
        for label, out, manifest, write_s in results:
            best, median, first, n = timed(lambda out=out: tokq_batches(out, args.batch), args.repeats)
            assert n == tokens, (label, n, tokens)
            size = manifest["bytes"]
            groups = sum(len(TokqDataset(str(out), batch_size=1).output.files[k].row_groups) for k in range(len(manifest["files"])))
            print(
                f"{label:<20} {size / 1e6:8.1f} {raw_bytes / size:6.2f} {groups:>10} {n / best / 1e6:8.1f} {n / median / 1e6:8.1f} "
                f"{size / best / 1e6:7.0f} {first * 1e3:9.2f}ms {n / best / ref_rate:8.2f} {write_s:8.1f}"
            )


if __name__ == "__main__":
    main()
