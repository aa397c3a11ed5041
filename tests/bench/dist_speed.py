"""The installed binary against the release build: size, and the speed of each stage, one core.

`cargo install --path crates/cli --profile dist` builds a binary sized crate by crate (whole-program
LTO, the row path at opt-level 3, the rest at "s" or "z"; docs/build.md#the-installed-binary). This
runs the same recipes with both binaries, alternating, `--partitions 1` under `taskset -c 1`, and
prints each binary's size, the wall and CPU seconds of every run, and the ratio of the medians:

    python tests/bench/dist_speed.py --release $CARGO_TARGET_DIR/release/tokq \\
        --dist $CARGO_TARGET_DIR/dist/tokq --shared ../shared [--rounds 3]
"""
import argparse
import gzip
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
# The recipes the per-stage benchmarks time, so that both measure the same statements.
from fineweb_cascade import SQL as CASCADE  # noqa: E402
from html_extract import SQL as HTML  # noqa: E402
from tokenize_speed import RECIPE as TOKENIZE  # noqa: E402


def copies(src: pathlib.Path, folder: pathlib.Path, n: int) -> str:
    """The gzip corpus as n plain JSONL files (the dedup recipes then find every copy's spans again)."""
    folder.mkdir()
    with gzip.open(src, "rb") as f:
        data = f.read()
    for i in range(n):
        (folder / f"part{i}.jsonl").write_bytes(data)
    return str(folder / "*.jsonl")


def stages(shared: pathlib.Path, tmp: pathlib.Path):
    wiki = copies(shared / "corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz", tmp / "wiki", 1)
    wiki4 = copies(shared / "corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz", tmp / "wiki4", 4)
    reuters6 = copies(shared / "corpora/reuters-21578/reuters21578.jsonl.gz", tmp / "reuters6", 6)
    recipes = {}
    for name, text in [("tokenize", TOKENIZE), ("cascade", CASCADE), ("html", HTML.replace("${options}", ""))]:
        recipes[name] = tmp / f"{name}.sql"
        recipes[name].write_text(text)
    out = ["--set", f"output={tmp}/o/out/"]
    both = out + ["--set", f"rejects={tmp}/o/rejects/", "--set", f"work={tmp}/o/work/"]
    llama3 = shared / "tokenizers/llama3/tokenizer.json"
    return [
        ("tokenize Llama-3, Wikipedia", [recipes["tokenize"], "--set", f"tokenizer={llama3}", "--set", f"input={wiki}", *out]),
        ("tokenize cl100k, Wikipedia", [recipes["tokenize"], "--set", "tokenizer=tiktoken:cl100k_base", "--set", f"input={wiki}", *out]),
        ("FineWeb cascade, Wikipedia", [recipes["cascade"], "--set", f"input={wiki}", *out]),
        ("html_to_text, 991 pages", [recipes["html"], "--set", f"input={shared}/corpora/web-html/trafilatura-eval.warc.gz", *out]),
        ("MinHash dedup, Reuters x6", [ROOT / "queries/dedup.sql", "--set", f"input={reuters6}", *both]),
        ("sentence dedup, Wikipedia x4", [ROOT / "queries/sentence-dedup.sql", "--set", f"input={wiki4}", *both]),
    ]


def run(tokq: str, args, tmp: pathlib.Path):
    shutil.rmtree(tmp / "o", ignore_errors=True)
    pin = ["taskset", "-c", "1"] if shutil.which("taskset") and os.cpu_count() > 1 else []
    before = os.times()
    start = time.perf_counter()
    subprocess.run([*pin, tokq, "run", *map(str, args), "--quiet", "--partitions", "1"], check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--release", required=True)
    ap.add_argument("--dist", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each binary, alternating")
    a = ap.parse_args()
    binaries = {"release": a.release, "dist": a.dist}
    for name, path in binaries.items():
        print(f"{name}: {path} {os.path.getsize(path) / 1e6:.1f} MB")
    with tempfile.TemporaryDirectory() as t:
        tmp = pathlib.Path(t)
        print(f"\n{'stage':<32} {'release wall s (cpu)':>28} {'dist wall s (cpu)':>28} {'dist/release':>13}")
        for label, args in stages(pathlib.Path(a.shared), tmp):
            runs = {name: [] for name in binaries}
            for _ in range(a.rounds):
                for name, path in binaries.items():
                    runs[name].append(run(path, args, tmp))
            cells = [" ".join(f"{w:.2f}({c:.2f})" for w, c in runs[name]) for name in binaries]
            ratio = statistics.median(w for w, _ in runs["release"]) / statistics.median(w for w, _ in runs["dist"])
            print(f"{label:<32} {cells[0]:>28} {cells[1]:>28} {ratio:>12.2f}x")
    print("\ndist/release above 1 means the dist binary is faster (medians of wall seconds).")


if __name__ == "__main__":
    main()
