"""tokq from Python.

- `tokq.sql(query)` runs SQL with every tokq function and returns a `pyarrow.Table`.
- `tokq.run(recipe, params)` runs a recipe file as `tokq run` does and returns its statistics.
- `@tokq.udf(return_type)` makes a Python function over pyarrow arrays a SQL function.
- `tokq.register(ctx)` adds tokq's functions to a stock `datafusion.SessionContext`.
- `tokq.reader` reads tokq's pretokenized output for training (`TokqDataset`).
- The `tokq` command comes with the package.
"""

from ._native import __version__
from ._run import run, sql
from .datafusion import register
from .errors import ClusterError, RecipeError, StatementError, TokqError
from .reader import FORMAT_VERSION, TokqDataset, TokqFormatError, open_output, read_manifest
from .udf import udf

__all__ = [
    "FORMAT_VERSION",
    "ClusterError",
    "RecipeError",
    "StatementError",
    "TokqDataset",
    "TokqError",
    "TokqFormatError",
    "__version__",
    "open_output",
    "read_manifest",
    "register",
    "run",
    "sql",
    "udf",
]
