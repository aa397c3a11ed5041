"""One large uncompressed JSONL file on every core: `queries/fineweb.sql` (the FineWeb cascade,
kept rows and rejects) over a single >= 1 GB file with --partitions 1 and --partitions 2, and
with --partitions 2 and splitting off (`tokq.split_bytes = 0`, the file read whole by one task,
as before pieces). Prints wall time, MB/s and the ratios, and checks that the three runs wrote
the same rows and the two split runs the same files byte for byte.

    python tests/bench/one_file.py --tokq $CARGO_TARGET_DIR/release/tokq --shared ../shared --gb 1
"""
import argparse
import hashlib
import pathlib
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from scaling import make_input, run_client  # noqa: E402

RECIPE = pathlib.Path(__file__).resolve().parents[2] / "queries" / "fineweb.sql"


def digest(dirs):
    """sha256 of every file of the folders, by name: the same files byte for byte."""
    h = {}
    for d in dirs:
        for f in sorted(d.iterdir()):
            h[f"{d.name}/{f.name}"] = hashlib.sha256(f.read_bytes()).hexdigest()
    return h


def rows(tokq: str, out: pathlib.Path) -> str:
    """Row count, sum and distinct count of `_row` of an output folder, as tokq reads it."""
    q = f"SELECT count(*) AS n, sum(_row) AS s, count(DISTINCT _row) AS d FROM read_parquet('{out}/')"
    return subprocess.run([tokq, "run", "-c", q], check=True, capture_output=True, text=True).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokq", required=True)
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--gb", type=float, default=1.0)
    a = ap.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="tokq-one-file-"))
    try:
        inp = work / "in"
        size = make_input(pathlib.Path(a.shared), inp, a.gb, 1)
        big = inp / "shard-000.jsonl"
        print(f"input: one file, {size / 1e6:.0f} MB ({big})")
        runs = {}
        for name, partitions, split in [("p1", 1, None), ("p2", 2, None), ("p2-whole", 2, 0)]:
            # One output folder for all runs: the folder is part of the recipe the footers record.
            out, rej = work / "out", work / "rej"
            shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(rej, ignore_errors=True)
            args = [a.tokq, "run", str(RECIPE), "--quiet", "--partitions", str(partitions),
                    "--set", f"input={big}", "--set", f"output={out}/", "--set", f"rejects={rej}/"]
            if split is not None:
                recipe = work / "whole.sql"
                # The recipe INCLUDEs parts beside it.
                shutil.copytree(RECIPE.parent / "parts", work / "parts", dirs_exist_ok=True)
                text = RECIPE.read_text()
                # After the PARAMETERS block, which must come first.
                end = text.index(");\n", text.index("PARAMETERS (")) + 3
                recipe.write_text(f"{text[:end]}SET tokq.split_bytes = {split};\n{text[end:]}")
                args[2] = str(recipe)
            wall, rss = run_client(args, out)
            files = len([f for f in out.iterdir() if f.name.startswith("part-")])
            runs[name] = (wall, digest([out, rej]), rows(a.tokq, out), rows(a.tokq, rej))
            print(f"{name:9} --partitions {partitions} {'split_bytes=0' if split == 0 else '':13} "
                  f"{wall:6.1f} s  {size / 1e6 / wall:6.1f} MB/s  peak RSS {rss:5.0f} MiB  {files} output files")
        p1, p2, whole = runs["p1"], runs["p2"], runs["p2-whole"]
        print(f"--partitions 2 vs 1: {p1[0] / p2[0]:.2f}x; split vs whole file at --partitions 2: {whole[0] / p2[0]:.2f}x")
        same_bytes = p1[1] == p2[1]
        same_rows = p1[2:] == p2[2:] == whole[2:]
        print(f"byte-identical files at 1 and 2 partitions: {same_bytes}; same rows in all three runs: {same_rows}")
        if not (same_bytes and same_rows):
            raise SystemExit("outputs differ")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
