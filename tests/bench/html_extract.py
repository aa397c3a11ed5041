"""Main-text extraction, quality and speed on one core: tokq's `html_to_text` against Python
trafilatura, in one run on the same pages, on two sets of pages.

`--corpus web-html`: the shared 991-page WARC of trafilatura's own evaluation set; `evaldata.json`
holds, per page, snippets a good extraction must contain (`with`) and must not (`without`).
Prints, per extractor: the share of `with` snippets found and of `without` snippets absent (over
all snippets, as trafilatura's evaluation counts them), the same averaged per page, precision,
recall, F1 and pages/s.

`--corpus wcxb`: WCXB's development split (1,497 pages of 7 page types with human ground truth),
scored by the functions of WCXB's own `evaluate.py`: word-level F1, precision and recall averaged
over pages, overall and per page type, and the with/without snippet rates. Both extractors are
also run in their precision-favouring settings (tokq's `precision=true` against trafilatura's
`favor_precision=True`, as FineWeb runs it through datatrove).

trafilatura 2.3 runs with `include_comments=False, include_tables=True` on each page's bytes,
timed around the calls alone, pinned to one core. tokq runs a whole `tokq run` (start-up, WARC
reading and a Parquet write included) with one partition, pinned to one core with taskset when it
is there; the same run without `html_to_text` is timed too, and tokq's extraction alone is the
difference. `--worst N` lists the pages where tokq loses most; `--per-page FILE` writes every
page's scores as CSV; `--results DIR` writes each extractor's texts as the JSON `evaluate.py
--results` reads (WCXB only).

    python tests/bench/html_extract.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared [--corpus wcxb]
"""
import argparse
import csv
import gzip
import importlib.util
import json
import os
import shutil
import subprocess
import tempfile
import time

import pyarrow.parquet as pq
import trafilatura
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

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


def pinned():
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})


def tokq_timed(args, warc, options, work, n):
    """tokq's texts in page order, its whole-run pages/s and its extraction-alone pages/s."""
    texts, seconds = run_tokq(args.tokq, warc, options, work)
    _, baseline_s = run_tokq(args.tokq, warc, options, work, BASELINE)
    assert len(texts) == n, (len(texts), n)
    alone = n / max(seconds - baseline_s, 1e-9)
    return texts, n / seconds, alone, (seconds, baseline_s)


def web_html(args):
    warc = os.path.join(args.shared, "corpora/web-html/trafilatura-eval.warc.gz")
    pages = pages_of(warc)
    entries = snippets_of(args.shared, pages)
    print(f"== trafilatura's evaluation pages ({len(pages)}, snippets) ==")
    with tempfile.TemporaryDirectory() as work:
        tokq_texts, _, alone, (tokq_s, baseline_s) = tokq_timed(args, warc, args.options, work, len(pages))
    tokq_rate = summary("tokq", entries, tokq_texts, tokq_s)
    print(f"{'':<12} extraction alone (whole run {tokq_s:.2f} s minus the run without it, {baseline_s:.2f} s): {alone:.1f} pages/s")
    if not args.skip_trafilatura:
        pinned()
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


TYPES = ["article", "forum", "product", "collection", "listing", "documentation", "service"]


def wcxb_evaluator(shared):
    """WCXB's own evaluate.py, loaded from the shared copy: its tokenizer, F1 and snippet rules."""
    path = os.path.join(shared, "corpora/wcxb-dev/evaluate.py")
    spec = importlib.util.spec_from_file_location("wcxb_evaluate", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wcxb_warc(shared, ids, gt, path):
    """The dev pages as one WARC of HTTP responses (Content-Type without a charset: both
    extractors decode by the page), and their bytes in the same order."""
    pages = []
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=False)
        for i in ids:
            body = gzip.open(os.path.join(shared, f"corpora/wcxb-dev/dev/html/{i}.html.gz")).read()
            url = gt[i]["url"] or f"https://wcxb.invalid/{i}"
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            rec = writer.create_warc_record(url, "response", payload=__import__("io").BytesIO(body), http_headers=headers)
            writer.write_record(rec)
            pages.append((url, body))
    return pages


def wcxb_scores(ev, ids, gt, texts):
    rows = []
    for i, t in zip(ids, texts):
        t = t or ""
        p, r, f1 = ev.word_f1(t, gt[i]["main_content"])
        rows.append((gt[i]["page_type"], p, r, f1, ev.snippet_check(t, gt[i]["with"]), ev.snippet_check(t, gt[i]["without"])))
    return rows


def wcxb_report(name, rows, pages_per_s):
    mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")  # noqa: E731
    f1 = mean([r[3] for r in rows])
    per_type = {t: mean([r[3] for r in rows if r[0] == t]) for t in TYPES}
    print(
        f"{name:<22} F1 {f1:.3f} P {mean([r[1] for r in rows]):.3f} R {mean([r[2] for r in rows]):.3f} "
        f"with {mean([r[4] for r in rows]):.3f} without {mean([r[5] for r in rows]):.3f} "
        + " ".join(f"{t[:5]} {per_type[t]:.3f}" for t in TYPES)
        + f"  {pages_per_s:.1f} pages/s"
    )
    return f1, per_type


def wcxb(args):
    ev = wcxb_evaluator(args.shared)
    root = os.path.join(args.shared, "corpora/wcxb-dev")
    cwd = os.getcwd()
    os.chdir(root)  # load_ground_truth reads relative to its own folder, set at import
    try:
        gt = ev.load_ground_truth("dev")
    finally:
        os.chdir(cwd)
    urls = {}
    for i in gt:
        urls[i] = json.load(open(os.path.join(root, f"dev/ground-truth/{i}.json"))).get("url")
        gt[i]["url"] = urls[i]
    ids = sorted(gt)
    counts = {t: sum(gt[i]["page_type"] == t for i in ids) for t in TYPES}
    print(f"== WCXB dev ({len(ids)} pages: " + ", ".join(f"{t} {counts[t]}" for t in TYPES) + "; word F1 as evaluate.py) ==")
    results = {}
    with tempfile.TemporaryDirectory() as work:
        warc = os.path.join(work, "wcxb.warc")
        pages = wcxb_warc(args.shared, ids, gt, warc)
        settings = [("tokq", args.options), ("tokq precision=true", ",".join(x for x in [args.options, "precision=true"] if x))]
        for name, options in settings[: 1 if args.skip_precision else 2]:
            texts, rate, alone, _ = tokq_timed(args, warc, options, work, len(ids))
            results[name] = (texts, rate, alone)
    if not args.skip_trafilatura:
        pinned()
        for name, precision in [("trafilatura", False), ("trafilatura precision", True)][: 1 if args.skip_precision else 2]:
            start = time.perf_counter()
            texts = [
                trafilatura.extract(b, url=u, include_comments=False, include_tables=True, favor_precision=precision) for u, b in pages
            ]
            results[name] = (texts, len(pages) / (time.perf_counter() - start), None)
    scored = {}
    for name, (texts, rate, alone) in results.items():
        rows = wcxb_scores(ev, ids, gt, texts)
        scored[name] = (rows, wcxb_report(name, rows, rate))
        if alone:
            print(f"{'':<22} extraction alone: {alone:.1f} pages/s")
    for ours, theirs in [("tokq", "trafilatura"), ("tokq precision=true", "trafilatura precision")]:
        if ours in results and theirs in results:
            (f1, per_type), (tf1, tper) = scored[ours][1], scored[theirs][1]
            behind = [t for t in TYPES if per_type[t] < tper[t]]
            print(
                f"{ours} - {theirs}: F1 {f1 - tf1:+.3f}, {results[ours][1] / results[theirs][1]:.1f}x pages/s whole run, "
                f"{results[ours][2] / results[theirs][1]:.1f}x extraction alone; behind on: {', '.join(behind) or 'none'}"
            )
    if args.results:
        os.makedirs(args.results, exist_ok=True)
        for name, (texts, _, _) in results.items():
            with open(os.path.join(args.results, name.replace(" ", "_").replace("=", "-") + ".json"), "w") as f:
                json.dump({i: t or "" for i, t in zip(ids, texts)}, f)
    if args.per_page:
        with open(args.per_page, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["file_id", "page_type", "extractor", "precision", "recall", "f1", "with", "without"])
            for name, (rows, _) in scored.items():
                for i, r in zip(ids, rows):
                    w.writerow([i, r[0], name, *(f"{x:.4f}" for x in r[1:])])
    if args.worst:
        base = "trafilatura" if "trafilatura" in scored else "tokq"
        gaps = sorted(((b[3] - a[3], i, a[0], round(a[1], 3), round(a[2], 3)) for i, a, b in zip(ids, scored["tokq"][0], scored[base][0])), reverse=True)
        print(f"pages where tokq is furthest below {base} (gap, id, type, tokq P, tokq R):")
        for g in gaps[: args.worst]:
            print(g)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--corpus", choices=["web-html", "wcxb", "both"], default="both")
    ap.add_argument("--options", default="", help="html_to_text options for tokq, e.g. mode=page")
    ap.add_argument("--skip-trafilatura", action="store_true", help="score tokq alone (while tuning)")
    ap.add_argument("--skip-precision", action="store_true", help="WCXB: leave out the precision-favouring settings")
    ap.add_argument("--worst", type=int, default=0)
    ap.add_argument("--per-page")
    ap.add_argument("--results", help="WCXB: a folder for each extractor's texts as evaluate.py reads them")
    args = ap.parse_args()
    if args.corpus in ("web-html", "both"):
        web_html(args)
    if args.corpus in ("wcxb", "both"):
        wcxb(args)


if __name__ == "__main__":
    main()
