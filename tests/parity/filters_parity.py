"""Filter parity: tokq's quality functions against datatrove 0.10.1, document by document.

tokq runs `filters.sql` over each corpus (words, each filter's reason, C4's kept text, and the
FineWeb cascade, with lineage). Each row is looked up by (`_source`, `_row`) and judged again by
datatrove on a fresh Document: GopherRepetition, GopherQuality, C4 (paper defaults and FineWeb's
`filter_no_terminal_punct=False`), FineWebQuality, and the FineWeb cascade. spaCy's words are
compared too (datatrove's own cached split, so spaCy runs once per text). Prints agreement per
filter and corpus, the disagreements, and exits non-zero below --min-agreement for any filter or
below --min-word-agreement for the words.

    python tests/parity/filters_parity.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared --wikipedia-docs 1000
"""
import argparse
import gzip
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter

import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))


def documents(path, limit=None):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        n = 0
        for i, line in enumerate(f):
            if line.strip():
                yield i, json.loads(line)["text"]
                n += 1
                if limit is not None and n >= limit:
                    return


def reference_filters():
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
    )

    single = {
        "gopher_repetition": GopherRepetitionFilter(),
        "gopher_quality": GopherQualityFilter(),
        "c4_paper": C4QualityFilter(),
        "c4_fineweb": C4QualityFilter(filter_no_terminal_punct=False),
        "fineweb_quality": FineWebQualityFilter(),
    }
    cascade = [
        ("gopher_repetition", GopherRepetitionFilter()),
        ("gopher_quality", GopherQualityFilter()),
        ("c4_quality", C4QualityFilter(filter_no_terminal_punct=False)),
        ("fineweb_quality", FineWebQualityFilter()),
    ]
    return single, cascade


def judge(f, text):
    """(reason or None, the text the filter leaves) on a fresh document."""
    from datatrove.data import Document

    doc = Document(text=text, id="parity")
    r = f.filter(doc)
    if r is True:
        return None, doc.text
    return (r[1] if isinstance(r, tuple) else "dropped"), doc.text


def run_cascade(cascade, text):
    from datatrove.data import Document

    doc = Document(text=text, id="parity")
    for name, f in cascade:
        r = f.filter(doc)
        if r is not True:
            return f"{name}:{r[1] if isinstance(r, tuple) else 'dropped'}", None
    return None, doc.text


def difference(want, have):
    if isinstance(want, list):
        i = next((i for i, (x, y) in enumerate(zip(want, have)) if x != y), min(len(want), len(have)))
        return f"word {i}: datatrove {want[max(0, i - 2):i + 3]} tokq {have[max(0, i - 2):i + 3]}"
    if want[0] != have[0]:
        return f"datatrove {want[0]!r} tokq {have[0]!r}"
    return f"same decision {want[0]!r}, kept text differs"


_FILTERS = None


def reference_judgments(text):
    """datatrove's words and every filter's judgment of one text (runs in a worker process)."""
    global _FILTERS
    from datatrove.utils.text import split_into_words

    if _FILTERS is None:
        _FILTERS = reference_filters()
    single, cascade = _FILTERS
    out = {"words": split_into_words(text)}
    for name, f in single.items():
        reason, left = judge(f, text)
        out[name] = (reason, left) if name.startswith("c4") else (reason,)
    out["fineweb_cascade"] = run_cascade(cascade, text)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--min-agreement", type=float, default=0.995)
    ap.add_argument("--min-word-agreement", type=float, default=1.0)
    ap.add_argument("--show", type=int, default=5, help="disagreements to print per filter and corpus")
    ap.add_argument("--wikipedia-docs", type=int, default=1000, help="the first N Wikipedia documents (0: all)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count(), help="datatrove worker processes")
    a = ap.parse_args()
    single, _ = reference_filters()
    s = a.shared
    corpora = {
        "reuters-21578": (os.path.join(s, "corpora/reuters-21578/reuters21578.jsonl.gz"), None),
        "nltk-webtext": (os.path.join(s, "corpora/nltk-webtext/webtext.jsonl"), None),
        "wikipedia-en-2015": (os.path.join(s, "corpora/wikipedia-en-2015/wiki_en_2015_sample.jsonl.gz"), a.wikipedia_docs or None),
        "spdx-licenses": (os.path.join(s, "corpora/spdx-licenses/spdx_licenses.jsonl"), None),
    }
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for corpus, (path, limit) in corpora.items():
            out = os.path.join(tmp, corpus)
            t0 = time.perf_counter()
            subprocess.run(
                [a.tokq, "run", os.path.join(HERE, "filters.sql"), "--quiet", "--set", f"input={path}", "--set", f"output={out}/"],
                check=True,
            )
            tokq_s = time.perf_counter() - t0
            got = {}
            for f in sorted(os.listdir(out)):
                if f.endswith(".parquet"):
                    for row in pq.read_table(os.path.join(out, f)).to_pylist():
                        got[row["_row"]] = row
            same = Counter()
            kept = Counter()
            shown = Counter()
            total = 0
            t0 = time.perf_counter()
            docs = list(documents(path, limit))
            with multiprocessing.Pool(a.jobs) as pool:
                judged = pool.imap(reference_judgments, [text for _, text in docs], chunksize=32)
                for (line, _), ref in zip(docs, judged):
                    total += 1
                    mine = got.get(line)
                    if mine is None:
                        print(f"  {corpus} line {line}: missing from tokq's output")
                        continue
                    chain = mine["fineweb_chain"] or {}
                    checks = {"words": (ref["words"], mine["words"])}
                    for name in single:
                        want = ref[name]
                        have = (mine[name], mine[name + "_text"] if want[0] is None else want[1]) if name.startswith("c4") else (mine[name],)
                        checks[name] = (want, have)
                        kept[name] += want[0] is None
                    checks["fineweb_cascade"] = (ref["fineweb_cascade"], (chain.get("filter_reason"), chain.get("text")))
                    kept["fineweb_cascade"] += ref["fineweb_cascade"][0] is None
                    for name, (want, have) in checks.items():
                        if want == have:
                            same[name] += 1
                        elif shown[name] < a.show:
                            shown[name] += 1
                            print(f"  {corpus} line {line} {name}: {difference(want, have)}")
            ref_s = time.perf_counter() - t0
            for name in ["words", *single, "fineweb_cascade"]:
                rate = same[name] / max(total, 1)
                need = a.min_word_agreement if name == "words" else a.min_agreement
                ok = rate >= need and len(got) >= total
                failed |= not ok
                keep = "" if name == "words" else f"  datatrove keeps {100 * kept[name] / max(total, 1):.1f}%"
                print(f"{'ok' if ok else 'FAIL'} {corpus:<18} {name:<18} identical on {same[name]}/{total} docs ({100 * rate:.2f}%){keep}", flush=True)
            print(f"   {corpus}: tokq {tokq_s:.1f}s, datatrove {ref_s:.1f}s ({a.jobs} processes)", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
