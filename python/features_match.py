"""Checks that the wheel's build (crates/python alone, as maturin builds it) turns on the same
features of every crate as the workspace's test build (`cargo test --release`, dev-dependencies
included). Where they differ, building the wheel after the tests recompiles that crate and
everything above it (DataFusion: 25 minutes). Exits non-zero naming the crates and features.

    python python/features_match.py        # from the repository root; CI runs it before the wheel
"""

from __future__ import annotations

import collections
import subprocess
import sys


def features(*args: str) -> dict[str, set[str]]:
    """Each crate (name and version) with the feature sets it is built with (one per build
    context: a crate built for build scripts may have other features than the same crate linked)."""
    out = subprocess.run(["cargo", "tree", "-f", "{p}|{f}", "--prefix", "none", *args],
                         capture_output=True, text=True, check=True).stdout
    found: dict[str, set[str]] = collections.defaultdict(set)
    for line in out.splitlines():
        crate, _, feats = line.removesuffix(" (*)").partition("|")
        if crate:
            found[crate.removesuffix(" (proc-macro)")].add(feats)
    return found


def main() -> int:
    tests = features("--workspace", "-e", "normal,build,dev")
    wheel = features("-p", "tokq-python", "-e", "normal,build")
    # A crate of the wheel built with a feature set the tests' build does not have is built anew.
    differ = {c: (sorted(tests.get(c, ())), sorted(f)) for c, f in wheel.items()
              if not c.startswith("tokq") and not f <= tests.get(c, set()) and c in tests}
    for crate, (t, w) in sorted(differ.items()):
        print(f"{crate}: tests build {t}, wheel builds {w}")
    if differ:
        print("the wheel would rebuild these crates and what depends on them: add the tests' features to "
              "crates/python/Cargo.toml (see the comment there)", file=sys.stderr)
        return 1
    print(f"features match: the wheel's {len(wheel)} crates are built as the tests build them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
