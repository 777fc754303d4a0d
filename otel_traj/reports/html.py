"""The HTML report: one self-contained file (inline CSS and JS, no network) for a set of verdicts.

It renders from the JSON shape of ``otel_traj.serialize.verdict_to_dict``, so the same report comes
from live verdicts, from ``grade`` and from the SQLite store. Per trajectory: a timeline of model turns
and tool calls (concurrent calls on separate lanes, failing steps in red, arguments on hover), the
checks with their reasons, and a step table; a summary of outcomes on top.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

from otel_traj.reports.html_conversations import checks_table, conversations_html
from otel_traj.verdict import OUTCOMES

OUTCOME_LABELS: dict[str, str] = {outcome: outcome.replace("_", " ") for outcome in OUTCOMES}
TIP_CHARS = 600
CELL_CHARS = 400

_CSS = """
:root{--bg:#f6f7f9;--card:#fff;--ink:#1d2430;--mute:#667085;--line:#e3e6ea;--model:#c7cfe2;
--tool:#3b82c4;--err:#d92d20;--warn:#dc8a04;--ok:#12805c;--unsafe:#9f1239;--fail:#d92d20;
--pass_with_warnings:#dc8a04;--pass:#12805c;--incomplete:#667085;--unverified:#7a5af8}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.45 -apple-system,BlinkMacSystemFont,
"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1200px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}
.sub{color:var(--mute);margin:0 0 20px}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
.summary{display:flex;gap:12px;flex-wrap:wrap;margin-bottom:12px}
.stat{background:var(--card);border:1px solid var(--line);border-top:4px solid var(--c,var(--ink));
border-radius:8px;padding:10px 16px;min-width:120px;cursor:pointer;text-align:left;font:inherit;color:inherit}
.stat b{display:block;font-size:26px;line-height:1.1}.stat span{color:var(--mute)}
.stat.active{outline:2px solid var(--c,var(--ink))}
.failing{color:var(--mute);margin:0 0 24px}
.traj{background:var(--card);border:1px solid var(--line);border-left:5px solid var(--c);
border-radius:8px;margin:0 0 20px;padding:16px 20px}
.traj header{display:flex;align-items:baseline;gap:12px;flex-wrap:wrap}
.traj h2{font-size:17px;margin:0}
.badge{display:inline-block;border-radius:999px;padding:1px 10px;font-size:12px;font-weight:600;
color:#fff;background:var(--c)}
.meta{color:var(--mute);font-size:12px;display:flex;gap:14px;flex-wrap:wrap;margin:6px 0 10px}
.quotes{display:grid;grid-template-columns:1fr 1fr;gap:12px;margin-bottom:12px}
.quote{background:var(--bg);border-radius:6px;padding:8px 12px;font-size:13px}
.quote i{display:block;font-style:normal;color:var(--mute);font-size:11px;text-transform:uppercase}
.timeline{border:1px solid var(--line);border-radius:6px;padding:6px 10px;margin:8px 0 12px}
.row{display:flex;align-items:center;height:24px;border-bottom:1px solid #f0f2f4}
.lbl{flex:0 0 210px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;font-size:12px;
padding-right:8px}
.row.model .lbl{color:var(--mute)}
.row.error .lbl,.row.flagged .lbl{color:var(--err);font-weight:600}
.row.flagged.warning .lbl{color:var(--warn)}
.num{display:inline-block;width:30px;color:var(--mute);font-weight:400;font-size:11px}
.par{margin-left:6px;color:var(--tool);font-weight:700}
.track{position:relative;flex:1;height:100%}
.bar{position:absolute;top:5px;height:14px;border-radius:3px;background:var(--tool);min-width:3px;outline:none}
.row.model .bar{background:var(--model)}
.row.context .bar{background:var(--mute)}
.row.error .bar{background:var(--err)}
.row.flagged .bar{box-shadow:0 0 0 2px #fff,0 0 0 3px var(--err)}
.row.flagged.warning .bar{box-shadow:0 0 0 2px #fff,0 0 0 3px var(--warn)}
.row:hover{background:#f8fafc}
.note{position:absolute;top:4px;font-size:11px;color:var(--mute);white-space:nowrap}
.tag{display:inline-block;margin-left:6px;padding:0 6px;border-radius:3px;background:var(--err);color:#fff;
font-size:10px;font-weight:600;line-height:15px}
.tag.warning,.tag.info{background:var(--warn)}
.tip{display:none;position:absolute;z-index:10;top:18px;left:0;min-width:280px;max-width:560px;
background:#111827;color:#f9fafb;border-radius:6px;padding:8px 10px;font:12px/1.4 ui-monospace,
SFMono-Regular,Menlo,Consolas,monospace;white-space:pre-wrap;word-break:break-word;
box-shadow:0 6px 20px rgba(0,0,0,.25)}
.bar:hover>.tip,.bar:focus>.tip{display:block}
.axis{display:flex;height:18px;padding-left:210px}
.axis .track span{position:absolute;top:3px;font-size:10px;color:var(--mute);white-space:nowrap;
transform:translateX(-50%)}
.axis .track span:first-child{transform:none}.axis .track span:last-child{transform:translateX(-100%)}
table{border-collapse:collapse;width:100%;font-size:13px}
th{text-align:left;color:var(--mute);font-weight:600;font-size:11px;text-transform:uppercase;
border-bottom:1px solid var(--line);padding:4px 8px}
td{border-bottom:1px solid var(--line);padding:5px 8px;vertical-align:top}
tr.fail td{background:#fef3f2}tr.fail.warning td{background:#fffaeb}
.st{font-weight:700}.st.pass{color:var(--ok)}.st.fail{color:var(--err)}.st.skipped{color:var(--mute)}
details{margin-top:10px}summary{cursor:pointer;color:var(--mute)}
td.args{max-width:420px;word-break:break-word}
.legend{color:var(--mute);font-size:12px;display:flex;gap:14px;margin:0 0 16px}
.legend i{display:inline-block;width:12px;height:10px;border-radius:2px;margin-right:4px;
vertical-align:middle}
[hidden]{display:none!important}
h2.group{font-size:15px;color:var(--mute);margin:0 0 12px}
"""

# Filtering by outcome: a click on a summary card shows only that outcome; a second click shows all.
_JS = """
document.querySelectorAll('.stat').forEach(function(b){b.addEventListener('click',function(){
var o=b.dataset.outcome,on=b.classList.contains('active');
document.querySelectorAll('.stat').forEach(function(x){x.classList.remove('active')});
if(!on&&o){b.classList.add('active')}
document.querySelectorAll('.traj').forEach(function(t){t.hidden=!on&&!!o&&t.dataset.outcome!==o})})});
"""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        # Results are stored as JSON text; re-encode them compactly, keep anything else verbatim.
        try:
            return json.dumps(json.loads(value), ensure_ascii=False)
        except ValueError:
            return value
    return json.dumps(value, ensure_ascii=False)


def _ms(ns: int) -> str:
    ms = ns / 1e6
    return f"{ms:.0f} ms" if ms < 10_000 else f"{ms / 1000:.1f} s"


@dataclass(slots=True)
class _Step:
    number: int
    kind: str
    label: str
    start: int
    end: int
    ok: bool
    detail: dict[str, str]
    step_id: str
    parallel: bool = False


def _steps(v: Mapping[str, Any]) -> list[_Step]:
    """Model turns, observed tool calls, retrievals and memory operations in start order, numbered
    from 1."""
    raw: list[tuple[int, str, Mapping[str, Any]]] = []
    raw += [(m.get("start_ns") or 0, "model", m) for m in v.get("model_calls") or ()]
    raw += [(t.get("start_ns") or 0, "tool", t) for t in v.get("tool_calls") or () if t.get("observed", True)]
    operations = (*(v.get("context_reads") or ()), *(v.get("memory_writes") or ()))
    raw += [(c.get("start_ns") or 0, "context", c) for c in operations]
    raw.sort(key=lambda r: (r[0], r[1] == "tool"))
    steps: list[_Step] = []
    turn = 0
    for number, (start, kind, s) in enumerate(raw, 1):
        end = max(s.get("end_ns") or start, start)
        if kind == "model":
            turn += 1
            tokens = f"{s.get('input_tokens') or 0} in / {s.get('output_tokens') or 0} out"
            wants = ", ".join(s.get("requested_tools") or ()) or "final answer"
            detail = {"model": str(s.get("model") or "model"), "tokens": tokens, "next": wants}
            steps.append(_Step(number, kind, f"turn {turn}", start, end, True, detail, s.get("step_id", "")))
            continue
        if kind == "context":
            detail = {"source": str(s.get("source") or ""), "arguments": str(s.get("query") or "")}
        else:
            detail = {"arguments": _json(s.get("arguments"))}
        if kind == "context" and s.get("ok", True):
            detail["result"] = str(s.get("text") or "")
        elif s.get("ok", True):
            detail["result"] = _json(s.get("result"))
        else:
            detail["error"] = str(s.get("error") or s.get("error_type") or "error")
        if s.get("call_id"):
            detail["call id"] = str(s["call_id"])
        ok = bool(s.get("ok", True))
        name = str(s.get("name"))
        steps.append(
            _Step(number, kind, name, start, end, ok, detail, s.get("step_id", ""), bool(s.get("parallel")))
        )
    return steps


def _flags(v: Mapping[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """Step id -> (check name, severity) of every failed check that points at it."""
    flags: dict[str, list[tuple[str, str]]] = {}
    for check in v.get("checks") or ():
        if check.get("status") == "fail":
            for step in dict.fromkeys(check.get("steps") or ()):
                flags.setdefault(step, []).append((check["name"], check.get("severity", "error")))
    return flags


def _row(step: _Step, t0: int, span: int, flags: Sequence[tuple[str, str]]) -> str:
    """One waterfall row: the step's label, then its bar at its place in time. Parallel calls are
    rows whose bars overlap; the failed checks that point at a step are tagged next to its bar."""
    left = (step.start - t0) / span * 100
    width = max((step.end - step.start) / span * 100, 0.4)
    classes = ["row", step.kind]
    if not step.ok:
        classes.append("error")
    if flags:
        classes.append("flagged")
        if all(sev in ("warning", "info") for _, sev in flags):
            classes.append("warning")
    tip = [f"#{step.number} {step.label}  ({_ms(step.end - step.start)})"]
    tip += [f"{k}: {_clip(val, TIP_CHARS)}" for k, val in step.detail.items() if val]
    tip += [f"failed check: {name} ({sev})" for name, sev in flags]
    tags = "".join(f'<span class="tag {escape(sev)}">{escape(name)}</span>' for name, sev in flags)
    # Duration and tags go right of the bar, or left of it when the bar ends near the right edge.
    side = (
        f"left:calc({left + width:.3f}% + 6px)"
        if left + width < 75
        else f"right:calc({100 - left:.3f}% + 6px)"
    )
    marker = '<span class="par" title="ran in parallel">∥</span>' if step.parallel else ""
    return (
        f'<div class="{" ".join(classes)}" data-step="{escape(step.step_id)}">'
        f'<div class="lbl"><span class="num">#{step.number}</span>{escape(step.label)}{marker}</div>'
        f'<div class="track"><div class="bar" tabindex="0" style="left:{left:.3f}%;width:{width:.3f}%">'
        f'<span class="tip">{escape(chr(10).join(tip))}</span></div>'
        f'<span class="note" style="{side}">{_ms(step.end - step.start)}{tags}</span></div></div>'
    )


def _window(v: Mapping[str, Any], steps: Sequence[_Step]) -> tuple[int, int]:
    """Start and length (ns) of the run: the root span when known, widened to cover every step."""
    starts = [s.start for s in steps] + ([v["start_ns"]] if v.get("start_ns") else [])
    ends = [s.end for s in steps] + ([v["end_ns"]] if v.get("end_ns") else [])
    t0 = min(starts, default=0)
    return t0, max(max(ends, default=0) - t0, 1)


def _timeline(v: Mapping[str, Any], steps: Sequence[_Step], flags: Mapping[str, Any]) -> str:
    if not steps:
        return '<p class="sub">No model turns or tool calls were recorded for this trace.</p>'
    t0, span = _window(v, steps)
    rows = "".join(_row(s, t0, span, flags.get(s.step_id, ())) for s in steps)
    ticks = "".join(f'<span style="left:{p}%">{_ms(span * p // 100)}</span>' for p in (0, 25, 50, 75, 100))
    return f'<div class="timeline">{rows}<div class="axis"><div class="track">{ticks}</div></div></div>'


def _checks(v: Mapping[str, Any], numbers: Mapping[str, int]) -> str:
    def steps(check: Mapping[str, Any]) -> str:
        refs = dict.fromkeys(f"#{numbers[s]}" if s in numbers else s for s in check.get("steps") or ())
        return ", ".join(refs)

    return checks_table(v.get("checks") or (), "Not graded (no policy).", steps)


def _step_table(steps: Sequence[_Step], t0: int, flags: Mapping[str, Any]) -> str:
    rows = []
    for s in steps:
        if s.kind == "model":
            what = f"{s.detail['tokens']}; next: {s.detail['next']}"
            outcome = ""
        else:
            what = s.detail.get("arguments", "")
            outcome = s.detail.get("result") or s.detail.get("error", "")
        flagged = ", ".join(name for name, _ in flags.get(s.step_id, ()))
        cls = ' class="fail"' if flagged or not s.ok else ""
        rows.append(
            f"<tr{cls}><td>#{s.number}</td><td class=mono>+{_ms(s.start - t0)}</td>"
            f"<td><b>{escape(s.label)}</b></td><td class='args mono'>{escape(_clip(what, CELL_CHARS))}</td>"
            f"<td class='args mono'>{escape(_clip(outcome, CELL_CHARS))}</td><td>{escape(flagged)}</td></tr>"
        )
    head = (
        "<tr><th>#</th><th>at</th><th>step</th><th>arguments</th><th>result / error</th>"
        "<th>flagged by</th></tr>"
    )
    return f"<details><summary>Steps ({len(steps)})</summary><table>{head}{''.join(rows)}</table></details>"


def _stage(v: Mapping[str, Any]) -> str:
    stage = v.get("stage")
    return f"<span class=sub>broke at {escape(str(stage).replace('_', ' '))}</span>" if stage else ""


def _trajectory(v: Mapping[str, Any], index: int) -> str:
    outcome = str(v.get("outcome") or "incomplete")
    steps = _steps(v)
    flags = _flags(v)
    numbers = {s.step_id: s.number for s in steps}
    t0, _ = _window(v, steps)
    attrs = v.get("attributes") or {}
    meta = [
        ("trace", v.get("trace_id")),
        ("conversation", v.get("conversation_id")),
        ("customer", attrs.get("app.customer_id") or attrs.get("enduser.id")),
        ("service", v.get("service_name")),
        ("duration", f"{(v.get('duration_s') or 0) * 1000:.0f} ms"),
        ("tokens", f"{v.get('input_tokens') or 0:,} in / {v.get('output_tokens') or 0:,} out"),
        ("turns", v.get("model_turns")),
        ("tool calls", len(v.get("tool_calls") or ())),
    ]
    meta_html = "".join(f"<span>{k}: <b class=mono>{escape(str(val))}</b></span>" for k, val in meta if val)
    unobserved = [t["name"] for t in v.get("tool_calls") or () if not t.get("observed", True)]
    if unobserved:
        meta_html += f"<span>requested without a span: {escape(', '.join(unobserved))}</span>"
    if not v.get("complete", True):
        meta_html += "<span><b>incomplete: the root span never ended</b></span>"
    unreadable = v.get("unreadable") or ()
    if unreadable:
        meta_html += f"<span><b>unverified: {len(unreadable)} unreadable span(s)</b></span>"
    quotes = "".join(
        f'<div class="quote"><i>{label}</i>{escape(_clip(str(text), 600))}</div>'
        for label, text in (("user", v.get("user_input")), ("final answer", v.get("final_answer")))
        if text
    )
    return (
        f'<section class="traj" id="t{index}" data-outcome="{escape(outcome)}" '
        f'style="--c:var(--{escape(outcome)},var(--ink))"><header>'
        f"<h2>{escape(str(v.get('agent') or 'unknown'))}</h2>"
        f'<span class="badge">{escape(OUTCOME_LABELS.get(outcome, outcome))}</span>'
        f"<span class=sub>score {float(v.get('score') or 0):.2f}</span>{_stage(v)}</header>"
        f'<div class="meta">{meta_html}</div>'
        f"{f'<div class=quotes>{quotes}</div>' if quotes else ''}"
        f"{_timeline(v, steps, flags)}{_checks(v, numbers)}{_step_table(steps, t0, flags)}</section>"
    )


def _summary(verdicts: Sequence[Mapping[str, Any]]) -> str:
    counts = Counter(str(v.get("outcome")) for v in verdicts)
    cards = [f'<button class="stat" data-outcome=""><b>{len(verdicts)}</b><span>trajectories</span></button>']
    cards += [
        f'<button class="stat" data-outcome="{o}" style="--c:var(--{o})">'
        f"<b>{counts[o]}</b><span>{OUTCOME_LABELS[o]}</span></button>"
        for o in OUTCOMES
        if counts[o]
    ]
    failing = Counter(c["name"] for v in verdicts for c in v.get("checks") or () if c.get("status") == "fail")
    tally = ", ".join(f"{name} x{n}" for name, n in failing.most_common())
    return (
        f'<div class="summary">{"".join(cards)}</div>'
        f'<p class="failing">Failing checks: {escape(tally) if tally else "none"}</p>'
    )


def render_html(
    verdicts: Iterable[Mapping[str, Any]],
    title: str = "otel-traj report",
    generated_at: datetime | None = None,
    conversations: Iterable[Mapping[str, Any]] = (),
) -> str:
    """The report for ``verdicts`` (dicts from ``verdict_to_dict`` or the store), worst outcome first,
    after ``conversations`` (dicts from ``conversation_to_dict`` or the store) if any."""
    rank: dict[str, int] = {o: i for i, o in enumerate(OUTCOMES)}
    items = list(verdicts)
    ordered = sorted(
        items, key=lambda v: (rank.get(str(v.get("outcome")), len(rank)), v.get("start_ns") or 0)
    )
    moment = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S UTC")
    legend = (
        '<div class="legend"><span><i style="background:var(--model)"></i>model turn</span>'
        '<span><i style="background:var(--tool)"></i>tool call</span>'
        '<span><i style="background:var(--err)"></i>tool error</span>'
        '<span><i style="box-shadow:0 0 0 2px var(--err)"></i>flagged by a failed check</span>'
        "<span>∥ parallel call</span><span>hover a bar for its arguments and result</span></div>"
    )
    talks = list(conversations)
    anchors = {str(v.get("trace_id")): f"t{i}" for i, v in enumerate(ordered)}
    body = conversations_html(talks, anchors, rank) + "".join(
        _trajectory(v, i) for i, v in enumerate(ordered)
    )
    counted = f"{len(items)} trajectories" + (f", {len(talks)} conversation" if talks else "")
    counted += "s" if len(talks) > 1 else ""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body><main>"
        f"<h1>{escape(title)}</h1><p class=sub>{counted}, generated {moment} by otel-traj</p>"
        f"{_summary(items)}{legend}{body}</main><script>{_JS}</script></body></html>\n"
    )


def write_html(
    path: str | Path,
    verdicts: Iterable[Mapping[str, Any]],
    title: str = "otel-traj report",
    conversations: Iterable[Mapping[str, Any]] = (),
) -> Path:
    target = Path(path)
    target.write_text(render_html(verdicts, title, conversations=conversations), encoding="utf-8")
    return target
