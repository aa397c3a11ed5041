"""Main-text extraction, quality and speed on one core: tokq's `html_to_text` against Python
trafilatura, in one run on the same pages.

The pages are the shared 991-page WARC of trafilatura's own evaluation set; `evaldata.json` holds,
per page, snippets a good extraction must contain (`with`) and must not (`without`). trafilatura
2.3 runs as FineWeb runs it through datatrove (`extract(page, include_comments=False,
include_tables=True)`) on each response payload, timed around the calls alone. tokq runs a whole
`tokq run` (start-up, WARC reading and a Parquet write included) with one partition, pinned to
one core with taskset when it is there; the same run without `html_to_text` is timed too, and
tokq's extraction alone is the difference.

Prints, per extractor: the share of `with` snippets found and of `without` snippets absent (over
all snippets, as trafilatura's evaluation counts them), the same averaged per page, precision,
recall, F1 and pages/s; then tokq's speed ratio. `--worst N` lists the pages where tokq misses
most; `--per-page FILE` writes every page's scores for both as CSV.

    python tests/bench/html_extract.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import tempfile
import time

import pyarrow.parquet as pq
import trafilatura
from warcio.archiveiterator import ArchiveIterator

SQL = """COPY (SELECT _row, html_to_text(content, content_type${options}) AS text FROM read_warc('${input}'))
TO '${output}' STORED AS PARQUET;"""
# The same run without extraction: start-up, WARC reading and the write, to subtract.
BASELINE = """COPY (SELECT _row, arrow_cast(content_type, 'Utf8') AS text FROM read_warc('${input}'))
TO '${output}' STORED AS PARQUET;"""


def pages_of(warc):
    pages = []
    with open(warc, "rb") as f:
        for rec in ArchiveIterator(f):
            if rec.rec_type == "response":
                pages.append((rec.rec_headers.get_header("WARC-Target-URI"), rec.content_stream().read()))
    return pages


def snippets_of(shared, pages):
    """The evaluation entry of each page: by URL, or by file name for pages the set has no URL for."""
    evald = json.load(open(os.path.join(shared, "corpora/web-html/evaldata.json")))
    by_file = {v["file"]: v for v in evald.values()}

    def entry(url):
        if url in evald:
            return evald[url]
        if url.startswith("https://trafilatura-eval.invalid/"):
            return by_file.get(url.rsplit("/", 1)[1])
        return None

    return [entry(u) for u, _ in pages]


def page_scores(entry, text):
    text = text or ""
    found = sum(s in text for s in entry["with"])
    leaked = sum(s in text for s in entry["without"])
    return found, len(entry["with"]), leaked, len(entry["without"])


def summary(name, entries, texts, seconds):
    tp = fn = fp = tn = 0
    with_avg = without_avg = n = 0
    for e, t in zip(entries, texts):
        if e is None:
            continue
        found, w, leaked, wo = page_scores(e, t)
        tp, fn, fp, tn = tp + found, fn + w - found, fp + leaked, tn + wo - leaked
        with_avg += found / w if w else 1
        without_avg += (wo - leaked) / wo if wo else 1
        n += 1
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    f1 = 2 * precision * recall / (precision + recall)
    pages_per_s = len(texts) / seconds
    print(
        f"{name:<12} {n} pages: with found {recall:.3f} (per page {with_avg / n:.3f}), without absent "
        f"{tn / (tn + fp):.3f} (per page {without_avg / n:.3f}), precision {precision:.3f}, F1 {f1:.3f}; "
        f"{pages_per_s:.1f} pages/s"
    )
    return pages_per_s


def run_tokq(tokq, warc, options, work, sql=SQL):
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    recipe = os.path.join(work, "extract.sql")
    open(recipe, "w").write(sql.replace("${options}", f", '{options}'" if options else ""))
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    start = time.perf_counter()
    subprocess.run(pin + [tokq, "run", "--quiet", "--partitions", "1", recipe, "--set", f"input={warc}", "--set", f"output={out}"], check=True)
    seconds = time.perf_counter() - start
    rows = pq.read_table(out).to_pylist()
    texts = [r["text"] for r in sorted(rows, key=lambda r: r["_row"])]
    return texts, seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--options", default="", help="html_to_text options for tokq, e.g. mode=page")
    ap.add_argument("--skip-trafilatura", action="store_true", help="score tokq alone (while tuning)")
    ap.add_argument("--worst", type=int, default=0)
    ap.add_argument("--per-page")
    args = ap.parse_args()

    warc = os.path.join(args.shared, "corpora/web-html/trafilatura-eval.warc.gz")
    pages = pages_of(warc)
    entries = snippets_of(args.shared, pages)
    with tempfile.TemporaryDirectory() as work:
        tokq_texts, tokq_s = run_tokq(args.tokq, warc, args.options, work)
        _, baseline_s = run_tokq(args.tokq, warc, args.options, work, BASELINE)
    assert len(tokq_texts) == len(pages), (len(tokq_texts), len(pages))
    tokq_rate = summary("tokq", entries, tokq_texts, tokq_s)
    alone = len(pages) / (tokq_s - baseline_s)
    print(f"{'':<12} extraction alone (whole run {tokq_s:.2f} s minus the run without it, {baseline_s:.2f} s): {alone:.1f} pages/s")
    if not args.skip_trafilatura:
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {0})
        start = time.perf_counter()
        traf_texts = [trafilatura.extract(b, url=u, include_comments=False, include_tables=True) for u, b in pages]
        traf_rate = summary("trafilatura", entries, traf_texts, time.perf_counter() - start)
        print(f"tokq / trafilatura pages/s: {tokq_rate / traf_rate:.1f}x whole run, {alone / traf_rate:.1f}x extraction alone")
    if args.per_page:
        with open(args.per_page, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["url", "extractor", "with_found", "with", "without_leaked", "without"])
            for (url, _), e, t1, t2 in zip(pages, entries, tokq_texts, traf_texts if not args.skip_trafilatura else tokq_texts):
                if e is not None:
                    w.writerow([url, "tokq", *page_scores(e, t1)])
                    if not args.skip_trafilatura:
                        w.writerow([url, "trafilatura", *page_scores(e, t2)])
    if args.worst:
        rows = []
        for (url, _), e, t in zip(pages, entries, tokq_texts):
            if e is not None:
                found, w, leaked, wo = page_scores(e, t)
                missed = [s for s in e["with"] if s not in (t or "")][:2]
                rows.append((w - found, leaked, url, missed, len(t or "")))
        for row in sorted(rows, reverse=True)[: args.worst]:
            print(row)


if __name__ == "__main__":
    main()
