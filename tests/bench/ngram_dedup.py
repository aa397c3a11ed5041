"""queries/ngram-dedup.sql against Dolma's bff, the tool it follows, in one script run.

Both read the same gzip JSONL file (Reuters-21578, the Wikipedia sample, then the Wikipedia
sample again with the last word of every paragraph changed: natural repeats, distinct text and
near-duplicate paragraphs), on one core: bff with one thread, so that it reads the file in order
as tokq's lineage does, and tokq with `--partitions 1`. bff's filter is sized for a 1%
false-positive rate at the corpus's ~20M n-grams, as DCLM ran it (`--fp-rate 0.01`): seven
hashes per n-gram. Prints each one's wall time and MB/s, and how many documents come out with
the same text (tokq's rejects count as empty text, as bff writes them). The two differ where
bff's filter gives a false positive and, by design, where bff does not insert the n-grams of a
paragraph it removed (docs/guide/subdoc.md).

bff is built by hand (https://github.com/allenai/bff, `cargo build --release`; its zlib-ng
needs cmake, which `pip install cmake` provides). allenai/bff has the paragraph mode only, so the
comparison runs tokq with `remove_documents=false`.

    python tests/bench/ngram_dedup.py --tokq $CARGO_TARGET_DIR/release/tokq --bff /path/to/bff --shared ../shared
"""
import argparse
import gzip
import json
import os
import subprocess
import tempfile
import time

import pyarrow.parquet as pq


def corpus(shared, path):
    """Writes the benchmark corpus to `path` (gzip JSONL with id and text); returns its texts."""
    texts = []
    for rel in ("corpora/reuters-21578/reuters21578.jsonl.gz", "corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz"):
        with gzip.open(os.path.join(shared, rel), "rt") as f:
            texts += [json.loads(line)["text"] for line in f]
    wiki = texts[-4196:]
    # Near duplicates: each Wikipedia article again, every paragraph's last word changed.
    for t in wiki:
        texts.append("\n".join(p.rsplit(" ", 1)[0] + " edited" if " " in p else p for p in t.split("\n")))
    with gzip.open(path, "wt", compresslevel=1) as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"id": f"d{i}", "text": t}) + "\n")
    return texts


def timed(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--bff", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--core", default="1", help="the core both run on")
    ap.add_argument("--min-ngram-size", type=int, default=13)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "docs.jsonl.gz")
        texts = corpus(a.shared, src)
        mb = sum(len(t.encode()) for t in texts) / 1e6
        print(f"{len(texts):,} documents, {mb:.1f} MB of text; 13-grams, min_ngram_size {a.min_ngram_size}, threshold 0.8, paragraphs only")
        pin = ["taskset", "-c", a.core]
        os.makedirs(f"{tmp}/bff-out")
        # 9.6 bits per n-gram for 1%: bff's own formula then picks seven hashers. (A filter as
        # large as memory allows, as bff's README suggests, picks ~30 and runs 3-20x slower.)
        bff_s = timed(pin + [a.bff, "--bloom-filter-file", f"{tmp}/filter.bff", "--bloom-filter-size", str(30 << 20),
                             "--expected-ngram-count", "25000000", "--min-ngram-size", str(a.min_ngram_size), "--max-ngram-size", "13",
                             "--filtering-threshold", "0.8", "--threads", "1", "--output-directory", f"{tmp}/bff-out", src])
        tokq_s = timed(pin + [a.tokq, "run", "queries/ngram-dedup.sql", "--quiet", "--partitions", "1", "--set", f"input={src}",
                              "--set", f"output={tmp}/out/", "--set", f"rejects={tmp}/rej/", "--set", f"work={tmp}/work/",
                              "--set", f"min_ngram_size={a.min_ngram_size}", "--set", "remove_documents=false"])
        # bff keeps a document left with blank lines only; tokq rejects it: both count as empty.
        with gzip.open(f"{tmp}/bff-out/docs.jsonl.gz", "rt") as f:
            bff = {d["id"]: d["text"] if d["text"].strip() else "" for d in map(json.loads, f)}
        kept = pq.read_table(f"{tmp}/out", columns=["doc_id", "text"]).to_pydict()
        ours = {i: "" for i in pq.read_table(f"{tmp}/rej", columns=["doc_id"]).column("doc_id").to_pylist()}
        ours.update(zip(kept["doc_id"], kept["text"]))
        same = sum(bff[i] == ours[i] for i in bff)
        changed = [sum(t != texts[int(i[1:])] for i, t in d.items()) for d in (bff, ours)]
        print(f"bff (1 thread)   {bff_s:6.2f} s  {mb / bff_s:6.1f} MB/s  documents changed {changed[0]:,}")
        print(f"tokq (1 part.)   {tokq_s:6.2f} s  {mb / tokq_s:6.1f} MB/s  documents changed {changed[1]:,}  ({bff_s / tokq_s:.2f}x bff)")
        print(f"same text as bff: {same:,} of {len(bff):,} documents ({len(bff) - same:,} differ)")


if __name__ == "__main__":
    main()
