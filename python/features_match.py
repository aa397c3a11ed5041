"""Checks that the wheel's build (crates/python alone, as maturin builds it) turns on the same
features of every crate as the workspace's test build (`cargo test --release`, dev-dependencies
included). Where they differ, building the wheel after the tests recompiles that crate and
everything above it (DataFusion: 25 minutes). Exits non-zero naming the crates and features.

    python python/features_match.py        # from the repository root; CI runs it before the wheel
"""

from __future__ import annotations

import re
import subprocess
import sys


def target_features(*args: str) -> dict[str, str]:
    """Each crate (name and version) linked into the build's artifacts, with its features.

    Only the target context is compared: cargo builds a crate once more, with other features, for
    build scripts and proc-macros (the host), and comparing those copies too hid a difference
    once (`either` with `default` for the tests and without it for the wheel: a full rebuild).
    Build dependencies are left out by `-e`; the subtree under a proc-macro is skipped here."""
    out = subprocess.run(["cargo", "tree", "-f", "{p}|{f}", "--prefix", "depth", *args],
                         capture_output=True, text=True, check=True).stdout
    found: dict[str, str] = {}
    host_below: int | None = None  # depth of the proc-macro whose subtree is being skipped
    for line in out.splitlines():
        m = re.match(r"(\d+)(.*)", line)
        if not m:
            continue
        depth, node = int(m.group(1)), m.group(2).removesuffix(" (*)")
        if host_below is not None and depth > host_below:
            continue
        host_below = None
        crate, _, feats = node.partition("|")
        if crate.endswith(" (proc-macro)"):
            host_below = depth
            continue
        found[crate] = feats
    return found


def main() -> int:
    tests = target_features("--workspace", "-e", "normal,dev")
    wheel = target_features("-p", "tokq-python", "-e", "normal")
    differ = {c: (tests[c], f) for c, f in wheel.items()
              if not c.startswith("tokq") and c in tests and tests[c] != f}
    for crate, (t, w) in sorted(differ.items()):
        print(f"{crate}: tests build [{t}], wheel builds [{w}]")
    if differ:
        print("the wheel would rebuild these crates and what depends on them: add the tests' features to "
              "crates/python/Cargo.toml (see the comment there)", file=sys.stderr)
        return 1
    print(f"features match: the wheel's {len(wheel)} crates are built as the tests build them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
