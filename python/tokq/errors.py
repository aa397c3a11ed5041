"""The exceptions tokq raises. Each message is the one line the `tokq` command prints for the
same failure (file, line, and what to do)."""

from __future__ import annotations

from ._native import ClusterError, RecipeError, StatementError, TokqError

__all__ = ["ClusterError", "RecipeError", "StatementError", "TokqError"]
