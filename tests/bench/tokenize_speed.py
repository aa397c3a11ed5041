"""Tokenization speed: `tokq run` against Hugging Face tokenizers 1.x and Python tiktoken, in one
script run, on one core and on every core.

For each tokenizer and corpus, tokq runs a recipe that reads plain JSONL, tokenizes every
document and writes pretokenized Parquet with lineage; start-up (loading the tokenizer file) is
in its time. The references encode the same texts already decoded into Python strings, so their
time is the encoding alone:
- HF tokenizers: `Tokenizer.encode(text, add_special_tokens=False)`, one document at a time;
- Python tiktoken (tiktoken specs only): `encode_ordinary`.

One core: tokq with `--partitions 1` under `taskset -c 1`; this process pinned to the same core
while the references run (tokenizers 1.x encodes a long document on several threads: pinned,
they share the core). Every core: HF `encode_batch` on all the machine's cores against tokq at
`--partitions` = cores on the same corpus cut into two files per core (`--all-cores`). Each side keeps its best of `--repeat` runs. Token
counts must be the same on both sides (ids are compared by `tests/parity/tokenize_parity.py`).

tokq keeps each tokenizer file compiled (TOKQ_CACHE_DIR; here a folder of the script's own, so
no earlier run counts): every tokenizer is compiled once before any timing, as a user's first run
does, and the load line gives the three loads, whole processes for tokq: HF `Tokenizer.from_file`,
tokq's first load (parse and compile) and its load of the compiled form. `--no-tokenizer-cache`
times tokq parsing the file in every run.

Corpora: Wikipedia (English prose, warm cache), UDHR in ~380 languages (every document a new
script, cold cache), and code: this Python's standard library sources (`--code-mb` of them).
Tokenizers: gpt2, llama3, qwen, mistral v3 (SentencePiece BPE), a GPT-NeoX/OLMo-style file
(NFC, added tokens; built from gpt2's by tests/parity/tokenizer_files.py), cl100k and o200k.

    python tests/bench/tokenize_speed.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared \
        [--only llama3,cl100k_base] [--corpora wikipedia,code] [--repeat 2] [--all-cores] \
        [--ids-encoding byte_stream_split] [--no-tokenizer-cache]

with a Python that has tests/parity/requirements-tokenizers.txt (as .ci/run's
$HOME/.cache/tokq-venv-tokenizers).
"""
import argparse
import gzip
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "parity"))
from tokenizer_files import neox_style  # noqa: E402

RECIPE = """
COPY (SELECT _source, _row, tokenize(text, '${tokenizer}') AS input_ids FROM read_jsonl('${input}'))
TO '${output}' STORED AS PARQUET%s;
"""
CORE = 1


def texts(path: pathlib.Path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


def code_corpus(mb: float):
    """This Python's standard library sources, one file per document, in path order."""
    root = pathlib.Path(sysconfig.get_paths()["stdlib"])
    docs, size = [], 0
    for path in sorted(root.rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        docs.append(text)
        size += len(text.encode())
        if size >= mb * 1e6:
            break
    return docs


def tiktoken_encoding(shared: pathlib.Path, name: str):
    """tiktoken.get_encoding without a download: its cache seeded with the local rank file."""
    cache = tempfile.mkdtemp(prefix="tiktoken-cache-")
    url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
    shutil.copy(shared / "tokenizers" / "openai-tiktoken" / f"{name}.tiktoken",
                os.path.join(cache, hashlib.sha1(url.encode()).hexdigest()))
    os.environ["TIKTOKEN_CACHE_DIR"] = cache
    import tiktoken
    return tiktoken.get_encoding(name)


def run_tokq(tokq: str, recipe: pathlib.Path, spec: str, inp: pathlib.Path, out: pathlib.Path, partitions: int):
    shutil.rmtree(out, ignore_errors=True)
    pin = ["taskset", "-c", str(CORE)] if partitions == 1 and shutil.which("taskset") else []
    start = time.perf_counter()
    subprocess.run([*pin, tokq, "run", str(recipe), "--quiet", "--partitions", str(partitions),
                    "--set", f"tokenizer={spec}", "--set", f"input={inp}", "--set", f"output={out}/"],
                   check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    # Counted after the clock stops: reading the output back is the check, not the job.
    tokens = sum(pc.sum(pc.list_value_length(t.column("input_ids"))).as_py() or 0
                 for t in (pq.read_table(f) for f in sorted(out.glob("part-*.parquet"))))
    return seconds, tokens


def load_times(tokq: str, shared: pathlib.Path, name: str, spec: str, kind: str):
    """One line: the reference's load, tokq's first load and its load of the compiled form."""
    def tokq_load():
        start = time.perf_counter()
        out = subprocess.run(["taskset", "-c", str(CORE), tokq, "tokenizer", spec], check=True, capture_output=True, text=True)
        compiled = next((line.split(" ", 2)[1] for line in out.stdout.splitlines() if line.startswith("compiled ")), "-")
        return time.perf_counter() - start, compiled
    start = time.perf_counter()
    if kind == "hf":
        from tokenizers import Tokenizer
        Tokenizer.from_file(spec)
        ref = f"HF from_file {1e3 * (time.perf_counter() - start):.0f} ms"
    else:
        tiktoken_encoding(shared, spec.split(":", 1)[1])
        ref = f"tiktoken get_encoding {1e3 * (time.perf_counter() - start):.0f} ms"
    (first, how), (again, how_again) = tokq_load(), tokq_load()
    return f"load {name:<12} {ref}; tokq tokenizer: {1e3 * first:.0f} ms ({how}), again {1e3 * again:.0f} ms ({how_again})"


def best_of(repeat, fn):
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--only", help="comma-separated tokenizer names (default: all)")
    ap.add_argument("--corpora", default="wikipedia,udhr,code")
    ap.add_argument("--code-mb", type=float, default=20)
    ap.add_argument("--repeat", type=int, default=2, help="runs of each side; the best is kept")
    ap.add_argument("--ids-encoding", choices=["plain", "byte_stream_split"], default="plain",
                    help="the COPY option ids_encoding of tokq's output (plain is the default)")
    ap.add_argument("--no-tokenizer-cache", action="store_true", help="tokq parses the tokenizer file in "
                    "every run (TOKQ_CACHE_DIR=off)")
    ap.add_argument("--all-cores", action="store_true", help="also HF encode_batch on every core "
                    "against tokq at --partitions = cores")
    a = ap.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
    import tokenizers
    from tokenizers import Tokenizer

    shared = pathlib.Path(a.shared).resolve()
    work = pathlib.Path(tempfile.mkdtemp(prefix="tokq-tokenize-"))
    hf = lambda name, file="tokenizer.json": str(shared / "tokenizers" / name / file)  # noqa: E731
    specs = {  # name: (tokq spec, reference kind)
        "gpt2": (hf("gpt2"), "hf"),
        "llama3": (hf("llama3"), "hf"),
        "qwen": (hf("qwen"), "hf"),
        "mistral-v3": (hf("mistral", "tokenizer.v3.json"), "hf"),
        "neox-style": (neox_style(str(shared), str(work)), "hf"),
        "cl100k_base": ("tiktoken:cl100k_base", "tiktoken"),
        "o200k_base": ("tiktoken:o200k_base", "tiktoken"),
    }
    if a.only:
        specs = {k: v for k, v in specs.items() if k in a.only.split(",")}
    sources = {
        "wikipedia": lambda: texts(shared / "corpora" / "wikipedia-en-2015" / "wiki_en_2015_sample.jsonl.gz"),
        "udhr": lambda: texts(shared / "corpora" / "udhr-multilingual" / "udhr2.jsonl"),
        "code": lambda: code_corpus(a.code_mb),
    }
    cores = len(os.sched_getaffinity(0))
    everything = os.sched_getaffinity(0)
    os.environ["TOKQ_CACHE_DIR"] = "off" if a.no_tokenizer_cache else str(work / "tokq-cache")
    try:
        for name, (spec, kind) in specs.items():
            print(load_times(a.tokq, shared, name, spec, kind), flush=True)
        recipe = work / "tokenize.sql"
        options = "" if a.ids_encoding == "plain" else f" OPTIONS ('ids_encoding' '{a.ids_encoding}')"
        recipe.write_text(RECIPE % options)
        print(f"HF tokenizers {tokenizers.__version__}; best of {a.repeat} runs each; one core = core {CORE}; "
              f"tokq's ids {a.ids_encoding}")
        header = f"{'tokenizer':<12} {'corpus':<10} {'MB':>6}  {'reference':<22} {'MB/s':>6}  {'tokq run MB/s':>13}  {'ratio':>6}  tokens"
        rows = []
        for corpus in a.corpora.split(","):
            docs = sources[corpus]()
            mb = sum(len(t.encode()) for t in docs) / 1e6
            inp = work / f"{corpus}.jsonl"
            with open(inp, "w", encoding="utf-8") as f:
                for i, t in enumerate(docs):
                    f.write(json.dumps({"id": i, "text": t}) + "\n")
            # Every core: the corpus as 2 files per core, as a sharded corpus is.
            shards = work / f"{corpus}-shards"
            shards.mkdir()
            per = -(-len(docs) // (2 * cores))
            for k in range(0, len(docs), per):
                with open(shards / f"{k:09d}.jsonl", "w", encoding="utf-8") as f:
                    for i, t in enumerate(docs[k:k + per], start=k):
                        f.write(json.dumps({"id": i, "text": t}) + "\n")
            for name, (spec, kind) in specs.items():
                if kind == "tiktoken":
                    enc = tiktoken_encoding(shared, spec.split(":", 1)[1])
                    refs = [("tiktoken (Python)", lambda: sum(len(enc.encode_ordinary(t)) for t in docs))]
                else:
                    tok = Tokenizer.from_file(spec)
                    refs = [(f"HF {tokenizers.__version__} encode",
                             lambda: sum(len(tok.encode(t, add_special_tokens=False).ids) for t in docs))]
                    if a.all_cores:
                        # Before any pinning: the thread pool is sized on first use.
                        all_s, all_n = best_of(a.repeat, lambda: sum(
                            len(e.ids) for e in tok.encode_batch(docs, add_special_tokens=False)))
                        tq_s, tq_n = min(run_tokq(a.tokq, recipe, spec, shards, work / "out", cores)
                                         for _ in range(a.repeat))
                        rows.append((name, corpus, mb, f"HF encode_batch x{cores}", mb / all_s,
                                     mb / tq_s, all_s / tq_s, "same" if all_n == tq_n else f"DIFFERENT {all_n} vs {tq_n}"))
                        print(fmt(rows[-1]), flush=True)
                for label, fn in refs:
                    os.sched_setaffinity(0, {CORE})
                    try:
                        ref_s, ref_n = best_of(a.repeat, fn)
                    finally:
                        os.sched_setaffinity(0, everything)
                    tq_s, tq_n = min(run_tokq(a.tokq, recipe, spec, inp, work / "out", 1) for _ in range(a.repeat))
                    rows.append((name, corpus, mb, label, mb / ref_s, mb / tq_s, ref_s / tq_s,
                                 "same" if ref_n == tq_n else f"DIFFERENT {ref_n} vs {tq_n}"))
                    print(fmt(rows[-1]), flush=True)
        print()
        print(header)
        for r in rows:
            print(fmt(r))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def fmt(r):
    name, corpus, mb, label, ref, tq, ratio, same = r
    return f"{name:<12} {corpus:<10} {mb:6.1f}  {label:<22} {ref:6.1f}  {tq:13.1f}  {ratio:5.2f}x  {same}"


if __name__ == "__main__":
    main()
