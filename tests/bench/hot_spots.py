"""Where a hot stage's time goes: `perf record` of one `tokq run`, pinned to one core, with the
samples summed by what the code does (permutations, hashing, word split, JSON, Parquet, memory).

The speed benchmarks say how fast a stage is; this says what bounds it. Each stage runs the same
recipe as its benchmark (tests/bench/minhash.py, fineweb_cascade.py, tokenize_speed.py) on the
same corpus, with `--partitions 1` under `taskset -c 0`. Needs Linux `perf` (Debian:
linux-perf); the benchmarks, not this, give the speed.

    python tests/bench/hot_spots.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared \
        [--stage minhash|cascade|tokenize] [--top 15]
"""
import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from fineweb_cascade import SQL as CASCADE_SQL  # noqa: E402
from minhash import SIGNATURES_SQL  # noqa: E402
from tokenize_speed import RECIPE as TOKENIZE_RECIPE  # noqa: E402

# What a symbol does, first match wins; the patterns are Rust paths and C symbols as perf names them.
COMMON = [
    ("read JSONL (decode, UTF-8 check, line split)", r"arrow_json|from_utf8|memchr|read_jsonl|lines"),
    ("write Parquet (encode, compress)", r"parquet::|ZSTD_|zstd|snappy|lz4"),
    ("Arrow kernels and builders", r"arrow_|datafusion"),
    ("memory (malloc, free, copies)", r"malloc|free|memmove|memcpy|memset|realloc"),
    ("kernel (page faults, file reads and writes)", r"\[k\]"),
]
STAGES = {
    "minhash": {
        "corpus": "corpora/reuters-21578/reuters21578.jsonl.gz",
        "sql": SIGNATURES_SQL,
        "groups": [
            ("permutations: min((x*a+b) mod 2^61-1), 112 per shingle", r"minhash::fold"),
            ("shingle hashing: xxh64 of each 5-gram", r"xxh64|xxh3|minhash::shingles|NeverShortCircuit"),
            ("word split (spaCy-equivalent)", r"text::words|text::pieces|each_span|LocalKey"),
            ("simplify_text", r"simplify_text|number_end|nfd|is_contained_in|str::.*contains"),
        ],
    },
    "cascade": {
        "corpus": "corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz",
        "sql": CASCADE_SQL,
        "groups": [
            ("GopherRepetition (lines, paragraphs, n-grams)", r"quality::repetition|splitlines|find_duplicates"),
            ("word split (spaCy-equivalent)", r"text::words|text::pieces|each_span|apply_phrases|all_letters|LocalKey"),
            ("C4 (lines, javascript, policy, lorem)", r"quality::c4|aho_corasick"),
            ("GopherQuality / FineWeb / shared vocabulary", r"quality::|Vocab|regex_automata|regex::"),
            ("hash tables", r"hashbrown|rustc_entry"),
        ],
    },
    "tokenize": {
        "corpus": "corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz",
        "sql": TOKENIZE_RECIPE.replace("${tokenizer}", "tiktoken:cl100k_base"),
        "groups": [
            ("rank table lookups", r"Vocab::get"),
            ("encode loop and piece cache", r"encode_ordinary|fast::cache"),
            ("pre-token split (cl100k pattern)", r"fast::split"),
            ("BPE merges of unseen pieces", r"fast::bpe"),
        ],
    },
}


def plain_jsonl(src: str, dst: str) -> float:
    """The corpus as plain JSONL (as the benchmarks give it); returns MB of text."""
    opener = gzip.open if src.endswith(".gz") else open
    mb = 0
    with opener(src, "rt", encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as out:
        for i, line in enumerate(f):
            if line.strip():
                text = json.loads(line)["text"]
                mb += len(text.encode())
                out.write(json.dumps({"id": str(i), "text": text}) + "\n")
    return mb / 1e6


def symbols(data: str) -> list[tuple[float, str]]:
    """(percent, symbol) of every sampled symbol, the whole process."""
    report = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "sym", "--stdio", "--percent-limit", "0.01"],
                            check=True, capture_output=True, text=True).stdout
    rows = []
    for line in report.splitlines():
        m = re.match(r"\s+([0-9.]+)%\s+(\[.\])\s+(.*)", line)
        if m:
            rows.append((float(m.group(1)), f"{m.group(2)} {m.group(3).strip()}"))
    return rows


def profile(a, name: str, stage: dict, tmp: str):
    data_in = os.path.join(tmp, f"{name}.jsonl")
    mb = plain_jsonl(os.path.join(a.shared, stage["corpus"]), data_in)
    recipe = os.path.join(tmp, f"{name}.sql")
    with open(recipe, "w") as f:
        f.write(stage["sql"])
    data = os.path.join(tmp, f"{name}.perf")
    out = os.path.join(tmp, f"{name}-out/")
    subprocess.run(["perf", "record", "-q", "-F", str(a.freq), "-o", data, "taskset", "-c", "0", a.tokq, "run", recipe, "--quiet",
                    "--partitions", "1", "--set", f"input={data_in}", "--set", f"output={out}"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows = symbols(data)
    groups = [(g, re.compile(p)) for g, p in stage["groups"] + COMMON]
    totals = {g: 0.0 for g, _ in groups}
    totals["other"] = 0.0
    for pct, sym in rows:
        group = next((g for g, p in groups if p.search(sym)), "other")
        totals[group] += pct
    print(f"\n{name}: {mb:.1f} MB of text, one core; share of the run's samples")
    for g, pct in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"  {pct:6.1f}%  {g}")
    print("  top symbols:")
    for pct, sym in rows[:a.top]:
        print(f"  {pct:6.2f}%  {sym[:110]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--stage", choices=sorted(STAGES), action="append", help="repeatable; default: every stage")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--freq", type=int, default=4999, help="samples per second")
    a = ap.parse_args()
    if not shutil.which("perf"):
        sys.exit("hot_spots.py needs Linux perf on PATH (Debian: apt-get install linux-perf)")
    tmp = tempfile.mkdtemp(prefix="tokq-profile-")
    try:
        for name in a.stage or sorted(STAGES):
            profile(a, name, STAGES[name], tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
