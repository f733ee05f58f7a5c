"""Files that ship inside the package, found with importlib.resources (never a checkout's paths).

`specs/` lives at the top of the repository and is installed as the package ``conformance._specs``
(setup.py maps it; an editable install maps it to the checkout's `specs/`). The committed regression
traces ship the same way as ``conformance._regressions``. Launcher and harness sources sit beside
their Python modules and are package data of those packages.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from conformance.errors import ToolError


def package_dir(package: str) -> Path:
    """The directory of ``package``'s files on disk (a wheel installs them as files, not a zip)."""
    try:
        root = files(package)
    except ModuleNotFoundError as exc:
        raise ToolError(
            f"{package} is not installed: install groupcheck (pip install groupcheck, or make install)"
        ) from exc
    if not isinstance(root, Path):
        raise ToolError(f"{package}: its files are not on disk ({root!r}); install groupcheck unzipped")
    return root


def specs_dir() -> Path:
    """`specs/`: invariants.yaml, scenarios/, targets.yaml."""
    return package_dir("conformance._specs")


def regressions_dir() -> Path | None:
    """The committed regression traces, or None where they were not installed."""
    try:
        return package_dir("conformance._regressions")
    except ToolError:
        return None
