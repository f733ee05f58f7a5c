"""Packaging beyond what pyproject.toml can say: `specs/` stays at the top of the repository and
ships inside the wheel as the package ``conformance._specs`` (read with importlib.resources), and
the committed regression traces as ``conformance._regressions`` (`groupcheck explain`'s examples).
Data folders (launcher and harness sources) are namespace packages so their package data ships.
"""

from pathlib import Path

from setuptools import find_namespace_packages, setup

DATA = {"conformance._specs": "specs", "conformance._regressions": "tests/regressions"}
for sub in sorted(Path("specs").iterdir()):
    if sub.is_dir() and sub.name[0] not in "._":
        DATA[f"conformance._specs.{sub.name}"] = f"specs/{sub.name}"
CODE = find_namespace_packages(
    include=["model", "model.*", "conformance", "conformance.*"], exclude=["*__pycache__*"]
)

setup(packages=[*CODE, *DATA], package_dir=DATA)
