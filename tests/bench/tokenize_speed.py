"""Tokenization speed per core: `tokq run` against Python tiktoken on the same text, in one
script run.

For each corpus, tokq runs a recipe that reads the JSONL, tokenizes every document with
`tokenize(text, 'tiktoken:NAME')` and writes pretokenized Parquet with lineage, pinned to one
core (`--partitions 1`, `taskset`); start-up (loading the rank table) is in its time. The token
count is read back from the Parquet files after the clock stops. tiktoken encodes the same texts (already decoded into
Python strings, so its time is the encoding alone) with `encode_ordinary` in one thread. Both
produce the same number of tokens, which the script checks. Rates are MB of text per second.

Corpora: Wikipedia (English, the warm-cache case) and UDHR in ~380 languages (every document a
new script: the cold-cache case).

    python tests/bench/tokenize_speed.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared
"""
import argparse
import gzip
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import time

import pyarrow.compute as pc
import pyarrow.parquet as pq

RECIPE = """
COPY (SELECT _source, _row, tokenize(text, 'tiktoken:{name}') AS input_ids FROM read_jsonl('${{input}}'))
TO '${{output}}' STORED AS PARQUET;
"""


def texts(path: pathlib.Path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


def tiktoken_encoding(shared: pathlib.Path, name: str):
    """tiktoken.get_encoding without a download: its cache seeded with the local rank file."""
    cache = tempfile.mkdtemp(prefix="tiktoken-cache-")
    url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
    shutil.copy(shared / "tokenizers" / "openai-tiktoken" / f"{name}.tiktoken",
                os.path.join(cache, hashlib.sha1(url.encode()).hexdigest()))
    os.environ["TIKTOKEN_CACHE_DIR"] = cache
    import tiktoken
    return tiktoken.get_encoding(name)


def run_tokq(tokq: str, recipe: pathlib.Path, inp: pathlib.Path, out: pathlib.Path):
    shutil.rmtree(out, ignore_errors=True)
    pin = ["taskset", "-c", "1"] if shutil.which("taskset") else []
    start = time.perf_counter()
    subprocess.run([*pin, tokq, "run", str(recipe), "--partitions", "1", "--set", f"input={inp}",
                    "--set", f"output={out}/"], check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    # Counted after the clock stops: reading the output back is the check, not the job.
    tokens = sum(pc.sum(pc.list_value_length(t.column("input_ids"))).as_py() or 0
                 for t in (pq.read_table(f) for f in sorted(out.glob("part-*.parquet"))))
    return seconds, tokens


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--encoding", default="cl100k_base")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each side; the best is kept")
    a = ap.parse_args()
    shared = pathlib.Path(a.shared).resolve()
    corpora = {
        "wikipedia": shared / "corpora" / "wikipedia-en-2015" / "wiki_en_2015_sample.jsonl.gz",
        "udhr": shared / "corpora" / "udhr-multilingual" / "udhr2.jsonl",
    }
    enc = tiktoken_encoding(shared, a.encoding)
    work = pathlib.Path(tempfile.mkdtemp(prefix="tokq-tokenize-"))
    try:
        recipe = work / "tokenize.sql"
        recipe.write_text(RECIPE.format(name=a.encoding))
        print(f"{a.encoding}, one core; best of {a.repeat} runs each")
        for name, src in corpora.items():
            docs = texts(src)
            mb = sum(len(t.encode()) for t in docs) / 1e6
            # tokq reads plain JSONL here, as tiktoken gets its texts already decoded.
            inp = work / f"{name}.jsonl"
            with open(inp, "w", encoding="utf-8") as f:
                for i, t in enumerate(docs):
                    f.write(json.dumps({"id": i, "text": t}) + "\n")
            tk_best, tq_best = float("inf"), float("inf")
            for _ in range(a.repeat):
                start = time.perf_counter()
                tk_tokens = sum(len(enc.encode_ordinary(t)) for t in docs)
                tk_best = min(tk_best, time.perf_counter() - start)
                seconds, tq_tokens = run_tokq(a.tokq, recipe, inp, work / f"out-{name}")
                tq_best = min(tq_best, seconds)
            same = "same" if tk_tokens == tq_tokens else f"DIFFERENT ({tk_tokens} vs {tq_tokens})"
            print(f"  {name:<10} {mb:7.1f} MB  tiktoken {mb / tk_best:6.1f} MB/s  "
                  f"tokq run (read, tokenize, write Parquet) {mb / tq_best:6.1f} MB/s  "
                  f"-> {tk_best / tq_best:.1f}x; tokens {same}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
