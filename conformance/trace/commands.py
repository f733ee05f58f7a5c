"""CLI handlers for `replay`, `show` and `explore` (cli.py holds only their parser block)."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

from conformance.errors import UsageError
from conformance.variants import parse_variants


def _port_factory(target: str) -> object:
    """The model needs none; a real target goes through the adapter layer (conformance/adapters)."""
    if target == "model":
        return None
    if importlib.util.find_spec("conformance.adapters") is None:
        raise UsageError(
            f"target {target!r}: replay on real coordinators goes through the adapter layer "
            "(conformance/adapters), which is not installed yet; available: model"
        )
    raise UsageError(
        f"target {target!r}: the adapter layer has no classic port for replay yet; available: model"
    )


def cmd_replay(args: argparse.Namespace) -> int:
    from conformance.trace.emit import emit_counterexample
    from conformance.trace.format import read_trace
    from conformance.trace.replay import replay

    trace = read_trace(Path(args.file))
    port_factory = _port_factory(args.target)
    result = replay(
        trace, target=args.target, variants=parse_variants(args.variant), port_factory=port_factory
    )
    shown = ", ".join(f"{k}={v}" for k, v in sorted(result.variants.items())) or "none"
    recorded = ", ".join(trace.violated) or "nothing"
    print(f"replay {args.file} on {args.target} (variants {shown}; recorded: {recorded}): {result.verdict}")
    if result.error:
        print(f"error: {result.error}")
        return result.exit_code
    print(
        f"  {len(trace.steps)} steps, {'exact' if result.exact else 'diverged'}"
        + (f" ({result.difference})" if result.difference else "")
    )
    for v in result.violations[:10]:
        print(f"  step {v.step}: {v.invariant}: {v.message}")
    if args.output and result.sim is not None:
        from conformance.trace.classic import to_trace

        again = to_trace(
            result.sim,
            target=args.target,
            target_version=trace.header["target"]["version"],
            origin={"kind": "replay", "of": trace.fingerprint()},
            violations=[(v.invariant, v.message, v.step) for v in result.violations],
        )
        emit_counterexample(again, Path(args.output))
    return result.exit_code


def _window(spec: str | None) -> tuple[int, int] | None:
    if spec is None:
        return None
    first, sep, last = spec.partition(":")
    try:
        lo = int(first) if first else 1
        hi = int(last) if sep and last else (lo if not sep else 10**9)
    except ValueError:
        raise UsageError(f"--steps {spec!r}: expected FROM:TO (step numbers)") from None
    return lo, hi


def cmd_show(args: argparse.Namespace) -> int:
    from conformance.trace import render
    from conformance.trace.format import read_trace

    path = Path(args.file)
    trace = read_trace(path)
    window = _window(args.steps)
    if args.format in ("svg", "png"):
        out = args.output or path.with_suffix(f".{args.format}")
        render.image(trace, out, args.format, window)
        print(f"wrote {out}")
        return 0
    body = render.text(trace, window) if args.format == "text" else render.mermaid(trace, window)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(body)
        print(f"wrote {args.output}")
    else:
        print(body, end="")
    return 0
