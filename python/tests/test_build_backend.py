"""The build backend's line: what `pip install ./python` says before compiling."""

from __future__ import annotations

import builtins
import importlib.util
from pathlib import Path
from typing import Any

import pytest

spec = importlib.util.spec_from_file_location("tokq_backend", Path(__file__).parents[1] / "backend" / "tokq_backend.py")
assert spec and spec.loader
backend = importlib.util.module_from_spec(spec)
spec.loader.exec_module(backend)


def test_target_dir_is_cargo_s(tmp_path: Path) -> None:
    assert backend.target_dir({"CARGO_TARGET_DIR": "/cache/t"}, tmp_path) == Path("/cache/t")
    assert backend.target_dir({}, tmp_path / "python") == tmp_path.resolve() / "target"


def test_cold_and_warm(tmp_path: Path) -> None:
    cold = backend.message(tmp_path)
    assert "20 minutes on 2 cores" in cold and "pip install -v ./python" in cold
    fingerprints = tmp_path / "release" / ".fingerprint"
    fingerprints.mkdir(parents=True)
    (fingerprints / "datafusion-common-0123").mkdir()
    assert "20 minutes" in backend.message(tmp_path), "another DataFusion crate is no warm build"
    (fingerprints / "datafusion-sql-4567").mkdir()
    warm = backend.message(tmp_path)
    assert "1-2 minutes" in warm and str(tmp_path) in warm


def test_without_a_terminal_the_line_goes_to_stderr(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    real_open = builtins.open

    def no_tty(path: Any, *args: Any, **kwargs: Any) -> Any:
        if path == "/dev/tty":
            raise OSError(6, "No such device or address")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", no_tty)
    backend.announce("tokq: compiling\n")
    assert capsys.readouterr().err == "tokq: compiling\n"
