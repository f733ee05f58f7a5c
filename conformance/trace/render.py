"""`groupcheck show`: a trace as a step table, a Mermaid sequence diagram, or an SVG/PNG image.

All three read the same rows: one arrow per request (member -> coordinator) and per response
(coordinator -> member), notes for time passing, faults and client-only changes, a note whenever
the group's state, generation or leader (classic) or epochs (consumer) change, and a red band over
the step where an invariant broke. Images are drawn with matplotlib's Agg backend: no browser, no
network, same input -> same picture.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.formats.trace_file import Step, Trace
from conformance.trace import describe

COORD = "coordinator"


@dataclass
class Row:
    step: int
    now: int
    kind: str  # "msg" | "reply" | "note" | "state" | "violation"
    text: str
    src: str = ""
    dst: str = ""
    bad: bool = False


def participants(trace: Trace) -> list[str]:
    names = [str(c["name"]) for c in trace.header.get("setup", {}).get("clients", []) if "name" in c]
    for step in trace.steps:
        client = getattr(step.event, "client", None)
        if client and client not in names:
            names.append(client)
    return [COORD, *names]


def _group_line(state: dict[str, Any] | None, names: describe.Names) -> str | None:
    group = (state or {}).get("group")
    if not group:
        return None
    if "generation" in group:
        leader = f", leader {names(group['leader'])}" if group.get("leader") else ""
        return f"{group['state']}, generation {group['generation']}{leader}"
    return ", ".join(f"{k} {v}" for k, v in sorted(group.items()) if k != "members")


def rows(trace: Trace, window: tuple[int, int] | None = None) -> list[Row]:
    names = describe.Names(trace.steps)
    owner: dict[int, str] = {}
    out: list[Row] = []
    previous_group: str | None = None
    for step in trace.steps:
        bad = bool(step.violated)
        event = step.event
        client = getattr(event, "client", None)
        ref = getattr(event, "ref", None)
        if client is not None and ref is not None:
            owner[ref] = client
        group_line = _group_line(step.state, names)
        shown = window is None or window[0] <= step.n <= window[1]
        if shown:
            out.extend(_step_rows(step, names, owner, bad))
            if group_line is not None and group_line != previous_group:
                out.append(Row(step.n, step.now, "state", group_line, bad=bad))
            for check in step.violated:
                out.append(
                    Row(
                        step.n,
                        step.now,
                        "violation",
                        f"VIOLATED {check.id}: {names.text(check.message)}",
                        bad=True,
                    )
                )
        previous_group = group_line or previous_group
    return out


def _step_rows(step: Step, names: describe.Names, owner: dict[int, str], bad: bool) -> list[Row]:
    event = step.event
    out: list[Row] = []
    request = getattr(event, "request", None)
    if request is not None:
        how = getattr(event, "how", "client")
        prefix = {"raw": "[injected] ", "duplicate": "[duplicate] "}.get(how, "")
        out.append(
            Row(step.n, step.now, "msg", prefix + describe.request(request, names), event.client, COORD, bad)
        )
    else:
        words = describe.action(step.action) if event is None else describe.event(event, step.action)
        who = step.action.get("client") or getattr(event, "client", "") or ""
        out.append(Row(step.n, step.now, "note", words, who, "", bad))
    expected = {d.ref: d.response for d in step.expected or ()}
    for d in step.actual or ():
        to = owner.get(d.ref, "?")
        text = describe.response(d.response, names)
        want = expected.get(d.ref)
        if want is not None and want != d.response:
            text += f" (model expected {describe.response(want, names)})"
        out.append(Row(step.n, step.now, "reply", text, COORD, to, bad))
    return out


# ------------------------------------------------------------------------------ text
def title(trace: Trace) -> str:
    h = trace.header
    variants = ", ".join(f"{k}={v}" for k, v in sorted(h["variants"].items())) or "none"
    origin = h["origin"]
    source = origin.get("id") or origin.get("kind")
    verdict = trace.verdict + (f": {', '.join(trace.violated)}" if trace.violated else "")
    return (
        f"{h['protocol']} on {h['target']['name']} {h['target']['version']} ({source}; variants {variants}; "
        f"seed {h['seed']}) -- {len(trace.steps)} steps -- {verdict}"
    )


def text(trace: Trace, window: tuple[int, int] | None = None) -> str:
    lines = [title(trace), ""]
    lines.append(f"{'step':>4}  {'t ms':>7}  {'who':<12} what")
    for r in rows(trace, window):
        mark = "!" if r.bad else " "
        if r.kind == "msg":
            who, what = r.src, f"-> {r.text}"
        elif r.kind == "reply":
            who, what = r.dst, f"<- {r.text}"
        elif r.kind == "state":
            who, what = COORD, f"== {r.text}"
        elif r.kind == "violation":
            who, what = "", f"!! {r.text}"
        else:
            who, what = r.src or "", f"** {r.text}"
        lines.append(f"{r.step:>4}{mark} {r.now:>7}  {who:<12} {what}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ mermaid
def _m(text: str) -> str:
    """Mermaid message text: no ';' or '#' (statement separator, entity) and no angle brackets."""
    return text.replace(";", ",").replace("#", "").replace("<", "(").replace(">", ")")


def mermaid(trace: Trace, window: tuple[int, int] | None = None) -> str:
    people = participants(trace)
    alias = {p: ("C" if p == COORD else p) for p in people}
    lines = ["sequenceDiagram", f"    %% {_m(title(trace))}"]
    for p in people:
        lines.append(f"    participant {alias[p]} as {p}" if alias[p] != p else f"    participant {p}")
    clients = [alias[p] for p in people if p != COORD]
    span = f"{clients[0]},{clients[-1]}" if clients else "C"
    open_band = False
    for r in rows(trace, window):
        if r.bad and not open_band:
            lines.append("    rect rgb(255, 205, 205)")
            open_band = True
        if not r.bad and open_band:
            lines.append("    end")
            open_band = False
        pad = "        " if open_band else "    "
        if r.kind == "msg":
            lines.append(f"{pad}{alias.get(r.src, r.src)}->>C: {r.step}. {_m(r.text)}")
        elif r.kind == "reply":
            lines.append(f"{pad}C-->>{alias.get(r.dst, r.dst)}: {_m(r.text)}")
        elif r.kind == "state":
            lines.append(f"{pad}Note over C: {_m(r.text)}")
        elif r.kind == "violation":
            lines.append(f"{pad}Note over C,{clients[-1] if clients else 'C'}: {_m(r.text)}")
        else:
            over = alias.get(r.src) if r.src in alias else None
            lines.append(f"{pad}Note over {over or span}: {r.step}. {_m(r.text)} (t={r.now} ms)")
    if open_band:
        lines.append("    end")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ image
def image(trace: Trace, path: Path, fmt: str, window: tuple[int, int] | None = None) -> Path:
    """Draw the sequence diagram with matplotlib (Agg) into ``path`` as svg or png."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "groupcheck"  # stable element ids: same trace, same SVG
    matplotlib.rcParams["svg.fonttype"] = "none"  # real <text> a reader can search and copy, not glyph paths
    import matplotlib.pyplot as plt

    people = participants(trace)
    data = rows(trace, window)
    col_w, left = 3.4, 1.3
    x = {p: left + col_w * (i + 0.5) for i, p in enumerate(people)}
    width = left + col_w * len(people)
    line_h = 0.16
    layout: list[tuple[Row, list[str], float]] = []
    for r in data:
        if r.kind in ("msg", "reply"):
            span = abs(x[r.src if r.src in x else COORD] - x.get(r.dst, x[COORD]))
            chars = max(24, int(span / 0.066))
        else:
            chars = int((width - left) / 0.075)
        wrapped = textwrap.wrap(r.text, chars) or [""]
        layout.append((r, wrapped, line_h * len(wrapped) + (0.22 if r.kind in ("msg", "reply") else 0.14)))
    heading = textwrap.wrap(title(trace), int(width / 0.085)) or [""]
    top = 0.9 + 0.18 * (len(heading) - 1)
    height = top + sum(h for _, _, h in layout) + 0.4
    fig = plt.figure(figsize=(width, height), dpi=110)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.axis("off")
    ax.text(0.15, 0.15, "\n".join(heading), fontsize=9.5, weight="bold", va="top", family="DejaVu Sans")
    head_y = top - 0.25
    for p in people:
        ax.text(
            x[p],
            head_y,
            p,
            ha="center",
            va="center",
            fontsize=10,
            weight="bold",
            bbox={"boxstyle": "round,pad=0.3", "fc": "#dde6f3" if p == COORD else "#eeeeee", "ec": "#555555"},
        )
        ax.plot([x[p], x[p]], [head_y + 0.2, height - 0.2], color="#999999", lw=0.8, zorder=0)
    y = top
    last_step = None
    for r, wrapped, h in layout:
        if r.bad:
            ax.add_patch(plt.Rectangle((0, y), width, h, color="#ffd0d0", zorder=-1, lw=0))
        if r.step != last_step:
            ax.text(0.12, y + 0.12, f"{r.step}", fontsize=8, weight="bold", va="top")
            ax.text(0.5, y + 0.12, f"t={r.now}", fontsize=7, va="top", color="#555555")
            last_step = r.step
        body = "\n".join(wrapped)
        if r.kind in ("msg", "reply"):
            x0 = x.get(r.src, x[COORD])
            x1 = x.get(r.dst, x[COORD])
            ya = y + h - 0.08
            ax.annotate(
                "",
                xy=(x1, ya),
                xytext=(x0, ya),
                arrowprops={
                    "arrowstyle": "-|>",
                    "color": "#1f4e9c" if r.kind == "msg" else "#2d7d2d",
                    "lw": 1.1,
                    "linestyle": "-" if r.kind == "msg" else "--",
                },
            )
            ax.text(
                (x0 + x1) / 2, ya - 0.05, body, ha="center", va="bottom", fontsize=7.5, family="DejaVu Sans"
            )
        else:
            style = {
                "state": ("#e3ecff", "#3b5ba5", "normal"),
                "violation": ("#ff9c9c", "#8b0000", "bold"),
                "note": ("#f4f4f4", "#777777", "normal"),
            }[r.kind]
            cx = x[COORD] if r.kind == "state" else (left + width) / 2
            if r.kind == "note" and r.src in x:
                cx = x[r.src]
            ax.text(
                cx,
                y + h / 2,
                body,
                ha="center",
                va="center",
                fontsize=7.5,
                weight=style[2],
                color="#222222",
                bbox={"boxstyle": "round,pad=0.2", "fc": style[0], "ec": style[1], "lw": 0.8},
            )
        y += h
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"Date": None} if fmt == "svg" else {}
    fig.savefig(path, format=fmt, metadata=meta)
    plt.close(fig)
    return path
