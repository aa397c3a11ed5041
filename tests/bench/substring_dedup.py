"""Exact-substring dedup speed: queries/substring-dedup.sql against Lee et al.'s
deduplicate-text-datasets (the Rust tool datatrove's ExactSubstrings stages and Nemotron-CC call),
one core, same script run, and how often both strike the same text.

The reference runs as datatrove drives it: GPT-2 tokens from Hugging Face tokenizers (one thread,
timed), one data file of uint16 tokens with a 6-byte separator before each document, then the
tool's `make` (the suffix array), `self-similar --length-threshold 2n --num-threads 1` and
`collect`. Its byte ranges become token ranges as datatrove's ESRangeRemover rounds them (to
whole tokens) and are struck from the text as tokq strikes them (a character partly struck goes
whole). tokq runs the whole recipe: reads JSONL, tokenizes, hashes, counts, strikes, writes
Parquet (`--partitions 1`, pinned). The tool compares bytes, so a repeat can also match at an odd
offset (half a token); those documents are counted apart.

Build the tool once by hand (it is not on a package registry):
    git clone https://github.com/google-research/deduplicate-text-datasets && cd deduplicate-text-datasets
    cargo build --release    # target/release/dedup_dataset

    python tests/bench/substring_dedup.py --tokq $CARGO_TARGET_DIR/release/tokq \
        --lee PATH/target/release/dedup_dataset --shared ../shared [--corpus reuters|wikipedia] [--n 50]
"""
import argparse
import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow.parquet as pq
from tokenizers import Tokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests/parity"))
from substring_dedup_parity import byte_decoder, strike  # noqa: E402

CORE = 1
SEPARATOR = 6  # b"\xff\xff" and a uint32 document number
CORPORA = {"reuters": "reuters-21578/reuters21578.jsonl.gz", "wikipedia": "wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz"}


def timed(cmd, **kw):
    t0 = time.perf_counter()
    p = subprocess.run(["taskset", "-c", str(CORE), *cmd], check=True, capture_output=True, text=True, **kw)
    return time.perf_counter() - t0, p.stdout


def parted_at_edge(mine, lee, text, lengths, ids, n):
    """Whether two strikings of `text` part only within its first or its last n tokens."""
    head = sum(lengths[i] for i in ids[:n])
    tail = sum(lengths[i] for i in ids[-n:])
    a, b = sorted([mine.encode(), lee.encode()], key=len)
    same_head = next((k for k in range(len(a)) if a[k] != b[k]), len(a))
    same_tail = next((k for k in range(len(a) - same_head) if a[-1 - k] != b[-1 - k]), len(a) - same_head)
    # Where the longer one differs: [same_head, len(b) - same_tail).
    return len(b) - same_tail <= head or same_head >= len(b) - tail


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--lee", required=True, help="deduplicate-text-datasets' dedup_dataset binary")
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--corpus", choices=sorted(CORPORA), default="reuters")
    ap.add_argument("--n", type=int, default=50, help="tokens per repeat")
    a = ap.parse_args()
    tokenizer_file = os.path.join(a.shared, "tokenizers/gpt2/tokenizer.json")
    with gzip.open(os.path.join(a.shared, "corpora", CORPORA[a.corpus]), "rt", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f if line.strip()]
    texts = [d["text"] for d in docs]
    mb = sum(len(t.encode()) for t in texts) / 1e6
    tok = Tokenizer.from_file(tokenizer_file)
    spell = byte_decoder()
    lengths = {i: len(bytes(spell[c] for c in t)) for t, i in tok.get_vocab().items()}
    os.sched_setaffinity(0, {CORE})
    t0 = time.perf_counter()
    ids = [tok.encode(t, add_special_tokens=False).ids for t in texts]
    t_tokenize = time.perf_counter() - t0
    os.sched_setaffinity(0, range(os.cpu_count()))
    work = tempfile.mkdtemp(prefix="tokq-substring-")
    try:
        data = os.path.join(work, "corpus.bin")
        starts = []
        with open(data, "wb") as f:
            at = 0
            for i, d in enumerate(ids):
                f.write(b"\xff\xff" + struct.pack("<I", i) + np.array(d, np.uint16).tobytes())
                starts.append(at + SEPARATOR)
                at += SEPARATOR + 2 * len(d)
        cache = os.path.join(work, "cache")
        os.makedirs(cache)
        t_make, _ = timed([a.lee, "make", "--data-file", data])
        t_self, _ = timed([a.lee, "self-similar", "--data-file", data, "--length-threshold", str(2 * a.n),
                           "--cache-dir", cache, "--num-threads", "1"])
        t_collect, out = timed([a.lee, "collect", "--data-file", data, "--cache-dir", cache,
                                "--length-threshold", str(2 * a.n)])
        # Byte ranges -> whole tokens of each document they touch (ESRangeRemover's rounding).
        struck = [set() for _ in ids]
        odd = set()
        starts_arr = np.array(starts)
        for line in out.splitlines():
            parts = line.split()
            if len(parts) != 2 or not all(p.isdigit() for p in parts):
                continue
            lo, hi = int(parts[0]), int(parts[1])
            doc = int(np.searchsorted(starts_arr, lo, side="right")) - 1
            while doc < len(ids) and starts_arr[doc] < hi:
                base, end = starts_arr[doc], starts_arr[doc] + 2 * len(ids[doc])
                a_, b_ = max(lo, base) - base, min(hi, end) - base
                if a_ < b_:
                    if a_ % 2 or b_ % 2:
                        odd.add(doc)
                    struck[doc].update(range((a_ + 1) // 2, b_ // 2))
                doc += 1
        lee_texts = [strike(t, d, lengths, s) if s else t for t, d, s in zip(texts, ids, struck)]

        input_path = os.path.join(work, "docs.jsonl")
        with open(input_path, "w", encoding="utf-8") as f:
            f.writelines(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts))
        t_tokq, _ = timed([a.tokq, "run", os.path.join(ROOT, "queries/substring-dedup.sql"), "--quiet", "--partitions", "1",
                           "--set", f"input={input_path}", "--set", f"output={work}/out/", "--set", f"rejects={work}/rejects/",
                           "--set", f"work={work}/work/", "--set", f"tokenizer={tokenizer_file}",
                           "--set", f"n_tokens={a.n}", "--set", "min_doc_words=0"])
        mine = {r["doc_id"]: r["text"] for r in pq.read_table(f"{work}/out").to_pylist()}
        mine.update({r["doc_id"]: "" for r in pq.read_table(f"{work}/rejects").to_pylist()})
    finally:
        shutil.rmtree(work, ignore_errors=True)

    t_lee = t_tokenize + t_make + t_self + t_collect
    print(f"{a.corpus}: {len(texts)} documents, {mb:.1f} MB, repeats of {a.n} tokens or more, one core")
    for name, s in [(f"HF tokenizers {__import__('tokenizers').__version__} GPT-2 encode (Python)", t_tokenize),
                    ("deduplicate-text-datasets make (suffix array)", t_make),
                    ("deduplicate-text-datasets self-similar", t_self), ("deduplicate-text-datasets collect", t_collect),
                    ("Lee et al. total (no striking, no reading or writing)", t_lee),
                    ("tokq queries/substring-dedup.sql (JSONL in, Parquet out)", t_tokq)]:
        print(f"  {name:<58} {s:7.2f} s  {mb / s:7.1f} MB/s")
    print(f"  tokq against Lee et al. with datatrove's tokenizing: {t_lee / t_tokq:.2f}x; "
          f"against the suffix-array stages alone: {(t_lee - t_tokenize) / t_tokq:.2f}x")
    same = sum(mine[str(i)] == lee_texts[i] for i in range(len(texts)))
    changed = sum(lee_texts[i] != texts[i] for i in range(len(texts)))
    differ = [i for i in range(len(texts)) if mine[str(i)] != lee_texts[i]]
    # The tool's separator bytes can lengthen a repeat that starts or ends a document: the same
    # "\xff\xff" (and id bytes) sit before every document, so n-1 tokens there plus them reach 2n
    # bytes. Such a difference is where the two texts part within n tokens of an edge.
    edge = {i for i in differ if parted_at_edge(mine[str(i)], lee_texts[i], texts[i], lengths, ids[i], a.n)}
    print(f"  same text: {same} of {len(texts)} documents ({changed} changed by Lee et al.); {len(differ)} differ: "
          f"{len(set(differ) & odd)} touched by an odd-offset (half-token) match, {len(edge - odd)} only within "
          f"{a.n} tokens of a document's start or end (the separator bytes), {len(set(differ) - odd - edge)} other")


if __name__ == "__main__":
    main()
