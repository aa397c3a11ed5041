"""detect_language accuracy on the UDHR in ~380 languages (`../shared/corpora/udhr-multilingual`).

tokq labels every translation; the label (ISO 639-3) is compared with the file's language code,
with individual languages folded into their macrolanguage where the model only knows the latter
(Standard Arabic `arb` is `ara`, ...). Reports accuracy over every language the model supports
and over the 20 most-spoken languages (Ethnologue 2023, total speakers) that it supports, lists
the misses, and exits non-zero below --min-top20.

    python tests/parity/language_accuracy.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import pyarrow.parquet as pq

# whatlang 0.16's languages (ISO 639-3).
SUPPORTED = set(
    "epo eng rus cmn spa por ita ben fra deu ukr kat ara hin jpn heb yid pol amh jav kor nob dan swe fin tur nld hun ces "
    "ell bul bel mar kan ron slv hrv srp mkd lit lav est tam vie urd tha guj uzb pan aze ind tel pes mal ori mya nep sin "
    "khm tuk aka zul sna afr lat slk cat tgl hye".split()
)
# Individual languages the UDHR files use, as the model's (macro)language codes.
FOLD = {"arb": "ara", "uzn": "uzb", "azj": "aze", "ekk": "est", "lvs": "lav", "npi": "nep", "nno": "nob", "swh": "swa", "pnb": "pan"}
TOP20 = ["eng", "cmn", "hin", "spa", "fra", "arb", "ben", "por", "rus", "urd", "ind", "deu", "jpn", "pcm", "arz", "mar", "tel", "tur", "tam", "yue"]
SQL = """COPY (SELECT id, detect_language(text)['iso639_3'] AS iso, detect_language(text)['score'] AS score
FROM read_jsonl('${input}')) TO '${output}' STORED AS PARQUET;"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--min-top20", type=float, default=0.95)
    a = ap.parse_args()
    path = os.path.join(a.shared, "corpora/udhr-multilingual/udhr2.jsonl")
    truth = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            truth[d["id"]] = d["metadata"]["iso639_3"]
    with tempfile.TemporaryDirectory() as tmp:
        recipe = os.path.join(tmp, "lang.sql")
        with open(recipe, "w") as f:
            f.write(SQL)
        subprocess.run([a.tokq, "run", recipe, "--quiet", "--set", f"input={path}", "--set", f"output={tmp}/out/"], check=True)
        got = {}
        for name in os.listdir(os.path.join(tmp, "out")):
            if name.endswith(".parquet"):
                for r in pq.read_table(os.path.join(tmp, "out", name)).to_pylist():
                    got[r["id"]] = r["iso"]
    supported = {i: FOLD.get(code, code) for i, code in truth.items() if FOLD.get(code, code) in SUPPORTED}
    right = [i for i, code in supported.items() if got.get(i) == code]
    print(f"supported languages: {len(right)}/{len(supported)} translations right ({100 * len(right) / len(supported):.1f}%); "
          f"{len(truth) - len(supported)} translations in languages the model does not know")
    top = {i: code for i, code in supported.items() if truth[i] in TOP20}
    top_right = [i for i, code in top.items() if got.get(i) == code]
    langs = sorted({truth[i] for i in top})
    rate = len(top_right) / len(top)
    print(f"20 most-spoken languages ({len(langs)} supported and in the UDHR: {' '.join(langs)}): "
          f"{len(top_right)}/{len(top)} translations right ({100 * rate:.1f}%)")
    for i, code in sorted(supported.items()):
        if got.get(i) != code:
            print(f"  miss {i}: expected {code}, got {got.get(i)}{'  (top 20)' if i in top else ''}")
    ok = rate >= a.min_top20
    print(f"{'ok' if ok else 'FAIL'} top-20 accuracy {100 * rate:.1f}% (minimum {100 * a.min_top20:.0f}%)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
