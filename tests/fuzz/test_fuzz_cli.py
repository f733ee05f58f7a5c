"""Generated command lines: a number out of its range is never accepted, and any command line ends
with an exit code of the contract, one line on error and no traceback (docs/hostile-input.md)."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from conformance.cli.arguments import preflight
from conformance.cli.main import build_parser, main
from conformance.errors import ToolError
from conformance.strict import RANGES

from .support import FUZZ, unforeseen

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
DEADLINE_S = 60.0

#: numeric options per command, by their name in `RANGES`
NUMERIC = {
    "check": ("max_examples", "seed", "restarts"),
    "explore": ("depth", "budget", "members", "partitions"),
}

nasty_number = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(
        ["nan", "inf", "-inf", "1e12", "0x10", "", "-0", "1_000", " 5", "5 ", "\u0663", "1e-400", "--"]
    ),
    st.text(max_size=12),
)


@FUZZ
@given(
    command=st.sampled_from(sorted(NUMERIC)),
    values=st.lists(st.tuples(st.integers(0, 3), nasty_number), min_size=1, max_size=4),
)
def test_an_out_of_range_number_is_never_accepted(command: str, values: list[tuple[int, str]]) -> None:
    names = NUMERIC[command]
    argv = [command]
    for index, value in values:
        name = names[index % len(names)]
        argv += [f"--{name.replace('_', '-')}={value}"]
    try:
        args = build_parser().parse_args(argv)
        preflight(args)
    except ToolError:
        event("refused (exit 2)")
        return
    event("accepted")
    for name in names:
        got = getattr(args, name)
        if got is None:
            continue
        lo, hi = RANGES[name]
        assert isinstance(got, int | float) and math.isfinite(got) and lo <= got <= hi, (argv, got)


_tokens = st.sampled_from(
    ["--variant", "sticky=v9", "mutant=nope", "join_version=4", "--steps", "3:1", "x:y", "--format", "mermaid",
     "--nope", "", "-", "--", "\x00", "é", "--depth", "2", "--protocol", "consumer", "mixed"]
)  # fmt: skip


def _command(kind: str, tmp: Path, draw: st.DrawFn) -> list[str]:
    if kind == "explore":
        return [
            "explore", "--depth", str(draw(st.integers(0, 2))), "--members", str(draw(st.integers(1, 2))),
            "--partitions", str(draw(st.integers(1, 2))), "--budget", str(draw(st.sampled_from([0.001, 0.5, 2]))),
            "--protocol", draw(st.sampled_from(["classic", "consumer"])), "--report-dir", str(tmp),
        ]  # fmt: skip
    if kind == "show":
        trace = draw(st.sampled_from(sorted(GOLDEN.glob("*.ndjson"))))
        return ["show", str(trace), "--steps", draw(st.text(max_size=8)), "--output", str(tmp / "out.txt")]
    if kind == "replay":
        trace = draw(st.sampled_from(sorted(GOLDEN.glob("*-model.ndjson"))))
        return ["replay", str(trace), "--variant", draw(st.text(max_size=20))]
    if kind == "explain":
        return ["explain", draw(st.text(max_size=30))]
    return ["scenario", "run", draw(st.text(max_size=20)), "--variant", draw(st.text(max_size=12))]


@FUZZ
@given(data=st.data(), kind=st.sampled_from(["explore", "show", "replay", "explain", "scenario"]))
def test_any_command_line_ends_in_the_contract(
    data: st.DataObject,
    kind: str,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tmp = tmp_path_factory.mktemp("cli")
    argv = _command(kind, tmp, data.draw) + data.draw(st.lists(_tokens, max_size=3))
    capsys.readouterr()
    start = time.monotonic()
    code = main(argv)
    took = time.monotonic() - start
    err = capsys.readouterr().err
    assert code in (0, 1, 2, 3), argv
    event(f"{kind}: exit {code}")
    assert not unforeseen(err), (argv, err)
    assert took < DEADLINE_S, argv
    if code == 2:
        assert err.count("\n") == 1 and err.startswith("groupcheck: error: "), (argv, err)
