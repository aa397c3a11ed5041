"""Shared pieces of the package's tests: where the repository and the shared corpora are."""

from __future__ import annotations

import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def shared() -> pathlib.Path:
    if not SHARED.is_dir():
        pytest.skip("../shared is not there")
    return SHARED
