"""Checks that the three builds a user runs turn on the same features of every crate they share:
`cargo run --release` (the workspace's default members), `cargo test --release` (the same, with
dev-dependencies) and the wheel (crates/python alone, as maturin builds it). Where two differ,
the later build recompiles that crate and everything above it (DataFusion: 25 minutes). Exits
non-zero naming the crates and features.

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
    tests = target_features("-e", "normal,dev")
    builds = {"cargo run": target_features("-e", "normal"),
              "the wheel": target_features("-p", "tokq-python", "-e", "normal")}
    failed = False
    for name, build in builds.items():
        differ = {c: (tests[c], f) for c, f in build.items()
                  if not c.startswith("tokq") and c in tests and tests[c] != f}
        for crate, (t, b) in sorted(differ.items()):
            print(f"{crate}: tests build [{t}], {name} builds [{b}]")
        failed |= bool(differ)
    if failed:
        print("a later build would recompile these crates and what depends on them: turn the tests' features "
              "on in crates/cli/Cargo.toml (see the comment there)", file=sys.stderr)
        return 1
    print(f"features match: `cargo run` ({len(builds['cargo run'])} crates) and the wheel "
          f"({len(builds['the wheel'])}) build every crate as the tests build it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
