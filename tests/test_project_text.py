"""The project speaks for itself: no work-log wording in tracked files; the README and docs hold together.

Work-log wording points at how the project was made (a numbered work session, a numbered task
ticket, the people who worked on it) instead of at what it is; Kafka's own terms (a session
timeout, session.timeout.ms) are not work-log wording. The docs checks: the README stays a front
door (at most 300 lines), every relative link of README.md and docs/*.md reaches a file and, with a
fragment, an anchor in it, and every repository path they name in code spans exists.
"""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))

#: a numbered work session (also hyphenated, or a range), a work session's end, a numbered ticket,
#: people; not Kafka's session durations ("a session of 2 s", "1.5 s") or session.timeout.ms
WORK_LOG = re.compile(
    r"\bsessions?[ -]\d+(?!\d)(?:\s*-\s*\d+(?!\d))?(?!\.\d|\s*(?:ms|s)\b)"
    r"|\bsession-end\b"
    r"|\bissues? #?\d+"
    r"|\bengineers?\b"
    r"|\bthe lead\b",
    re.IGNORECASE,
)


@cache
def tracked_text_files() -> tuple[Path, ...]:
    """Tracked files that decode as UTF-8 (images and other binary files are skipped)."""
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
    ).stdout.decode()
    files = []
    for name in out.split("\0"):
        if not name or name.startswith((".venv/", ".git/")):
            continue
        path = ROOT / name
        try:
            path.read_bytes().decode("utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        files.append(path)
    return tuple(files)


def work_log_mentions(text: str) -> list[tuple[int, str]]:
    """(line number, matched words) of every work-log mention in `text`."""
    return [(n, m.group(0)) for n, line in enumerate(text.splitlines(), 1) for m in WORK_LOG.finditer(line)]


# The samples spell the words through placeholders so that this file passes its own check.
_WORDS = {"S": "session", "Ss": "Session", "I": "issue", "E": "engine" + "ers", "L": "the " + "lead"}
_SAMPLES = {
    "numbered": ("{Ss} 8 runs (all three oracles)", ["{Ss} 8"]),
    "hyphenated": ("before the {S}-5 fixes", ["{S}-5"]),
    "range": ("{S}s 3-4 measured", ["{S}s 3-4"]),
    "tickets": ("open in {I} 4; KafScale {I} #121", ["{I} 4", "{I} #121"]),
    "people": ("shared with four other {E}' jobs; asked {L}", ["{E}", "{L}"]),
    "end": ("{Ss}-end run of {S} 5 ({S} 9, before {S}-9)", ["{Ss}-end", "{S} 5", "{S} 9", "{S}-9"]),
    "kafka-terms": ("members use a 1.5 s {S} and a {S} timeout of 2 s; {S}.timeout.ms=6000", []),
    "durations": ("c3 joined with a {S} of 2 s ({S} 2000 ms)", []),
    "addresses": ("the leader leaves; github.com/KafScale/platform/{I}s/121", []),
}


@pytest.mark.parametrize("name", sorted(_SAMPLES))
def test_the_work_log_pattern(name: str) -> None:
    text, found = _SAMPLES[name]
    assert [words for _, words in work_log_mentions(text.format(**_WORDS))] == [
        f.format(**_WORDS) for f in found
    ]


def test_no_work_log_wording_in_tracked_files() -> None:
    offenders = []
    for path in tracked_text_files():
        for line, words in work_log_mentions(path.read_text(encoding="utf-8")):
            offenders.append(f"{path.relative_to(ROOT)}:{line}: {words}")
    assert not offenders, f"{len(offenders)} work-log mentions:\n" + "\n".join(offenders)


def test_readme_is_a_front_door() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; move detail to docs/"


# ---------------------------------------------------------------------- links and anchors
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)|!\[[^\]\n]*\]\(([^)\s]+)\)")
_EXPLICIT_ANCHOR = re.compile(r"""<a\s+(?:id|name)=["']([^"']+)["']""")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)


def _prose(text: str) -> str:
    """The text without fenced code blocks and inline code spans."""
    return _CODE.sub("", _FENCE.sub("", text))


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"<[^>]+>", "", heading)  # inline HTML such as an anchor tag
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link keeps its text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def anchors_of(path: Path) -> frozenset[str]:
    text = path.read_text(encoding="utf-8")
    found = set(_EXPLICIT_ANCHOR.findall(text))
    seen: dict[str, int] = {}
    for heading in _HEADING.findall(_FENCE.sub("", text)):
        slug = github_slug(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return frozenset(found)


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """Relative links of a Markdown file that reach no file, or no anchor in the file they reach."""
    problems = []
    for match in _LINK.finditer(_prose(path.read_text(encoding="utf-8"))):
        target = match.group(1) or match.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
            continue  # https:, mailto: ...
        file_part, _, fragment = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            problems.append(f"{path.relative_to(root)}: {target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in anchors_of(dest):
            problems.append(f"{path.relative_to(root)}: {target}: no anchor #{fragment}")
    return problems


def test_the_link_checker_sees_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text('# A title\n\n<a id="kept"></a>\n', encoding="utf-8")
    page.write_text(
        "[ok](other.md#a-title) [ok](other.md#kept) [code](`x.md`) `[no](nowhere.md)`\n"
        "[bad](missing.md) [bad](other.md#gone) [ext](https://kafka.apache.org/protocol)\n",
        encoding="utf-8",
    )
    assert broken_links(page, tmp_path) == [
        "page.md: missing.md: no such file",
        "page.md: other.md#gone: no anchor #gone",
    ]


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path) -> None:
    assert not broken_links(path), "\n".join(broken_links(path))


_REPO_PATH = re.compile(
    r"`((?:conformance|model|specs|tests|benchmarks|reports)/[\w./-]*\.(?:py|md|yaml|json|go|xml))`"
)


def missing_repository_files(path: Path, root: Path = ROOT) -> list[str]:
    """Repository files a page names in code spans (`conformance/engine/kit.py`) that do not exist."""
    named = {m.group(1) for m in _REPO_PATH.finditer(path.read_text(encoding="utf-8"))}
    return sorted(p for p in named if not (root / p).exists())


def test_the_path_checker_sees_a_missing_file(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "here.py").write_text("", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("`model/here.py` and `model/gone.py`\n", encoding="utf-8")
    assert missing_repository_files(page, tmp_path) == ["model/gone.py"]


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_named_repository_file_exists(path: Path) -> None:
    missing = missing_repository_files(path)
    assert not missing, f"{path.relative_to(ROOT)} names files that do not exist: {missing}"


def test_the_readme_counts_the_catalogue_as_it_is() -> None:
    import yaml

    entries = yaml.safe_load((ROOT / "specs" / "invariants.yaml").read_text())["invariants"]
    promises = sum(1 for e in entries if e.get("nature") == "promise")
    text = " ".join(README.read_text().split())
    found = re.search(
        r"catalogue of (\d+) invariants \(`specs/invariants.yaml`, (\d+) of them promises", text
    )
    assert found is not None
    assert (int(found.group(1)), int(found.group(2))) == (len(entries), promises)
