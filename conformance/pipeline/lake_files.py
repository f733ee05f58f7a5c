"""Which files of a trace lake are Parquet at all, checked before Spark reads them (docs/pipeline.md).

Spark reads a directory lazily: a file in it that is not Parquet (or is truncated) fails the job
deep inside an executor, long after the read was planned, as a traceback. Each data file's footer
is read here first (pyarrow, no pyspark); a bad one is reported by name and left out, and the
audit that goes on without it is at best inconclusive. Files Spark itself skips (names starting
with ``_`` or ``.``: ``_SUCCESS``, checksums) are skipped here too.
"""

from __future__ import annotations

from pathlib import Path

from conformance.errors import UsageError

MAX_FILES = 100_000


def split_files(path: str) -> tuple[list[str], list[tuple[str, str]]]:
    """(readable Parquet files, [(unreadable file, why)]) under the lake directory ``path``; a
    single file is checked on its own. A lake with no readable file is a usage error."""
    import pyarrow.parquet as pq

    if "://" in path:  # a remote store: Spark reads it as it is
        return [path], []
    root = Path(path)
    if not root.exists():
        raise UsageError(f"{path}: no such trace lake")
    files = (
        [root]
        if root.is_file()
        else sorted(p for p in root.rglob("*") if p.is_file() and not _hidden(p, root))
    )
    if len(files) > MAX_FILES:
        raise UsageError(f"{path}: more than {MAX_FILES} files")
    good: list[str] = []
    bad: list[tuple[str, str]] = []
    for f in files:
        try:
            pq.read_metadata(f)
        except Exception as exc:  # noqa: BLE001 - pyarrow's errors for a bad footer vary by version
            bad.append(
                (str(f), f"not a Parquet file ({type(exc).__name__}: {str(exc).splitlines()[0][:120]})")
            )
            continue
        good.append(str(f))
    if not good:
        shown = "; ".join(f"{name}: {why}" for name, why in bad[:3]) or "no data files"
        raise UsageError(f"{path}: not a Parquet trace lake ({shown})")
    return good, bad


def _hidden(p: Path, root: Path) -> bool:
    return any(part.startswith(("_", ".")) for part in p.relative_to(root).parts)
