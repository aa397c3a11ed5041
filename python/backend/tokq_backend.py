"""pip's build backend for tokq: maturin's, after one line saying what is being compiled and how
long that takes. pip shows a backend's output only with `-v`, and a first build compiles
DataFusion and Ballista for many minutes, so the line goes to the terminal itself (/dev/tty)
where there is one, and to stderr (what `pip install -v` prints) where there is none.

Every PEP 517 hook other than the wheel builds is maturin's own, looked up when pip asks for it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# What `cargo run --release` takes cold on the 2-core CI machine, plus the Python module.
COLD = "about 20 minutes on 2 cores the first time (DataFusion and Ballista), less with more cores"
WARM = "1-2 minutes: {target} holds a release build of DataFusion"


def target_dir(env: Mapping[str, str], project: Path) -> Path:
    """The folder cargo builds in: CARGO_TARGET_DIR, else the workspace's `target` (the project is
    the `python` folder of the repository, where pip runs the backend)."""
    given = env.get("CARGO_TARGET_DIR")
    return Path(given) if given else project.resolve().parent / "target"


def message(target: Path) -> str:
    """The line to show: warm when the target folder already holds DataFusion's release build."""
    warm = any((target / "release" / ".fingerprint").glob("datafusion-sql-*"))
    expect = WARM.format(target=target) if warm else COLD
    return (f"tokq: compiling the Rust engine into the Python module: {expect}; "
            f"`pip install -v ./python` shows cargo's progress, and CARGO_TARGET_DIR keeps the build for the next install\n")


def announce(line: str) -> None:
    """Writes the line where the user sees it, past pip's capture of the backend's output."""
    try:
        with open("/dev/tty", "w") as tty:
            tty.write(line)
    except OSError:  # no controlling terminal: CI, a pipe
        sys.stderr.write(line)


def _announced(hook: str) -> Any:
    """maturin's wheel hook of that name, after the line."""
    def run(wheel_directory: str, config_settings: Mapping[str, Any] | None = None,
            metadata_directory: str | None = None) -> str:
        announce(message(target_dir(os.environ, Path.cwd())))
        import maturin
        return str(getattr(maturin, hook)(wheel_directory, config_settings, metadata_directory))
    return run


build_wheel = _announced("build_wheel")
build_editable = _announced("build_editable")


def __getattr__(name: str) -> Any:
    import maturin
    return getattr(maturin, name)
