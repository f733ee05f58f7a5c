"""The wheel a broker team installs works with no checkout anywhere: built from this repository,
installed in a fresh venv, run from an empty directory (specs, schema and launcher sources come
from the package through importlib.resources)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = (
    "conformance/_specs/invariants.yaml",
    "conformance/_specs/targets.yaml",
    "conformance/_specs/scenarios/kafka-7026.yaml",
    "conformance/formats/trace-v1.schema.json",
    "conformance/targets/apache_kafka/pom.xml",
    "conformance/targets/apache_kafka/log4j2.properties",
    "conformance/targets/kafka09/log4j.properties",
    "conformance/targets/kfake/main.go",
    "conformance/targets/kfake/go.mod",
    "conformance/targets/kfake/go.sum",
    "conformance/clients/go/main.go",
    "conformance/clients/java/pom.xml",
    "conformance/clients/java/src/main/java/groupcheck/AssignorHarness.java",
    "conformance/pipeline/log4j2.properties",
)


def _run(
    cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _data_files() -> list[str]:
    """Every file the installed package reads that is not Python: specs/, the regression traces,
    and the launchers' and harnesses' sources beside the code."""
    out = [f"conformance/_specs/{p.relative_to(ROOT / 'specs').as_posix()}" for p in _files(ROOT / "specs")]
    out += [f"conformance/_regressions/{p.name}" for p in (ROOT / "tests" / "regressions").glob("*.ndjson")]
    for pkg in ("conformance", "model"):
        out += [p.relative_to(ROOT).as_posix() for p in _files(ROOT / pkg)]
    return out


def _files(root: Path) -> list[Path]:
    return [
        p
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    ]


def _clean_copy(dest: Path) -> Path:
    """What the build reads, copied without caches or build leftovers."""
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.egg-info")
    dest.mkdir(parents=True)
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    for folder in ("model", "conformance", "specs", "tests/regressions"):
        shutil.copytree(ROOT / folder, dest / folder, ignore=skip)
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """(venv bin, empty working directory, environment) with the freshly built wheel installed."""
    base = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    source = _clean_copy(base / "src")  # no build/ left over from an older tree, none left behind
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(base / "dist"), str(source)],
        base,
        env,
    )
    assert built.returncode == 0, built.stderr
    assert "BuildBackendWarning" not in built.stderr, built.stderr  # e.g. the license metadata
    (wheel,) = (base / "dist").glob("groupcheck-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [n for n in (*SHIPPED, *_data_files()) if n not in names]
    assert not missing, missing
    venv = _run([sys.executable, "-m", "venv", str(base / "venv")], base, env)
    assert venv.returncode == 0, venv.stderr
    bin_dir = base / "venv" / "bin"
    pip = _run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)], base, env, timeout=900)
    assert pip.returncode == 0, pip.stderr[-3000:]
    work = base / "work"
    work.mkdir()
    return bin_dir, work, env


def test_the_package_comes_from_the_venv_not_the_checkout(
    installed: tuple[Path, Path, dict[str, str]],
) -> None:
    bin_dir, work, env = installed
    code = (
        "import conformance, conformance.specs as s, conformance.formats.schema as f, "
        "conformance.targets.apache_kafka as a, conformance.targets.kfake as k\n"
        "assert f.SCHEMA_PATH.is_file() and a.POM.is_file() and (k.SOURCE_DIR / 'go.sum').is_file()\n"
        "for p in (conformance.__file__, s.SPECS_DIR, f.SCHEMA_PATH, a.POM): print(p)"
    )
    out = _run([str(bin_dir / "python"), "-c", code], work, env)
    assert out.returncode == 0, out.stderr
    for line in out.stdout.splitlines():
        assert str(bin_dir.parent) in line and str(ROOT) not in line, line


def test_smoke_commands_run_from_an_empty_directory(installed: tuple[Path, Path, dict[str, str]]) -> None:
    bin_dir, work, env = installed
    gc = str(bin_dir / "groupcheck")
    listed = _run([gc, "scenario", "list"], work, env)
    assert listed.returncode == 0, listed.stderr
    assert "kafka-7026" in listed.stdout and "kip-848-rolling-upgrade" in listed.stdout
    valid = _run([gc, "specs", "validate"], work, env)
    assert valid.returncode == 0 and "specs valid:" in valid.stdout, valid.stderr
    explained = _run([gc, "explain", "classic.single_owner_consumer"], work, env)
    assert explained.returncode == 0, explained.stderr
    assert "counterexample: classic.single_owner_consumer_" in explained.stdout
    assert "VIOLATED classic.single_owner_consumer" in explained.stdout
    check = _run([gc, "check", "--target", "model", "--max-examples", "5"], work, env)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "classic on model: PASSED (5 examples" in check.stdout
