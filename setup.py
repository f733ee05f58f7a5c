"""Packaging beyond what pyproject.toml can say: `specs/` stays at the top of the repository and
ships inside the wheel as the package ``conformance._specs`` (read with importlib.resources), and
the committed regression traces as ``conformance._regressions`` (`groupcheck explain`'s examples).
Data folders (launcher and harness sources) are namespace packages so their package data ships.
Package data is declared here only (a [tool.setuptools.package-data] table would replace it).
"""

from pathlib import Path

from setuptools import find_namespace_packages, setup

DATA = {"conformance._specs": "specs", "conformance._regressions": "tests/regressions"}
for folder in sorted(Path("specs").rglob("*")):
    if folder.is_dir() and not any(part[0] in "._" for part in folder.parts):
        DATA["conformance._specs." + ".".join(folder.relative_to("specs").parts)] = folder.as_posix()
CODE = find_namespace_packages(
    include=["model", "model.*", "conformance", "conformance.*"], exclude=["*__pycache__*"]
)
SOURCES = ["*.go", "go.mod", "go.sum", "pom.xml", "*.java", "*.properties", "*.md"]

setup(
    packages=[*CODE, *DATA],
    package_dir=DATA,
    package_data={
        "model": ["py.typed"],
        "conformance": ["py.typed", "formats/*.json", *(f"**/{p}" for p in SOURCES)],
        **{name: ["*.yaml", "*.json", "*.ndjson"] for name in DATA},
    },
)
