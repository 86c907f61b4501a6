"""The report as one self-contained HTML page: inline style and script, no network, no assets.

Sections, each a <details> a reader opens: the summary (frames, graphs, breaks by gb_type,
recompiles, compile time) and a timeline of compiles; every graph break with its user stack and
source; every compile of a frame, with its user source (captured lines marked), phases, graphs
(fx code and a table of nodes with the user line of each), guards (each with the user line that
made it), the recompile reason, the original and modified bytecode side by side, and the
replacement code and the resume functions it calls as Python (framegraph.bytecode.decompile).
"""

from __future__ import annotations

import collections
import html
import linecache
import time

from .collect import BreakRecord, Collector, FrameRecord, GraphRecord, source_lines

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d232a;background:#f6f7f9}
header{background:#1d2b3a;color:#fff;padding:14px 22px}header h1{margin:0;font-size:20px}
main{padding:14px 22px}h2{font-size:17px;margin:22px 0 8px}
table{border-collapse:collapse;background:#fff;margin:6px 0}td,th{border:1px solid #d5d9df;padding:3px 8px;
text-align:left;vertical-align:top}th{background:#eef1f5}
details{background:#fff;border:1px solid #d5d9df;border-radius:5px;margin:6px 0;padding:4px 10px}
summary{cursor:pointer;font-weight:600}pre{background:#f3f5f8;padding:8px;overflow:auto;margin:6px 0;
font:12.5px/1.4 ui-monospace,monospace}.line{display:block}.hit{background:#dff5e1}.brk{background:#fde2e1}
.num{color:#8a94a0;display:inline-block;width:3.5em;user-select:none}.gb{color:#a3261f;font-weight:600}
.muted{color:#6b7480}.side{display:flex;gap:10px}.side>div{flex:1;min-width:0}
.bar{fill:#4f7cac}.bar.break{fill:#c0504d}#controls button{margin-right:6px}
"""

SCRIPT = """
document.getElementById('expand').addEventListener('click', function () {
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
});
document.getElementById('collapse').addEventListener('click', function () {
  document.querySelectorAll('details').forEach(function (d) { d.open = false; });
});
"""


def _e(text: object) -> str:
    return html.escape(str(text))


def _table(head: list[str] | None, rows: list[list[str]]) -> str:
    cells = "" if head is None else "<tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>"
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table>{cells}{body}</table>"


def _summary(collector: Collector) -> str:
    frames = collector.frames
    graphs = sum(len(f.graphs) for f in frames)
    ops = sum(g.ops for f in frames for g in f.graphs)
    recompiles = sum(1 for f in frames if f.recompile_reason is not None)
    total = sum(f.seconds for f in frames)
    by_type = collections.Counter(b.gb_type for b in collector.breaks)
    rows = [["frames compiled", str(len({(f.filename, f.firstlineno, f.name) for f in frames}))],
            ["compiles", str(len(frames))], ["graphs", str(graphs)], ["ops in graphs", str(ops)],
            ["graph breaks", str(len(collector.breaks))], ["recompiles", str(recompiles)],
            ["compile time", f"{total * 1000:.1f} ms"]]
    parts = [f'<section id="summary"><h2>Summary</h2>{_table(None, rows)}']
    if by_type:
        parts.append("<h2>Graph breaks by type</h2>" + _table(["gb_type", "count"],
                                                               [[t, str(n)] for t, n in by_type.most_common()]))
    parts.append(_timeline(collector) + "</section>")
    return "".join(parts)


def _timeline(collector: Collector) -> str:
    """Each compile as a bar on a time axis (seconds since the recording began); a red tick per
    graph break."""
    if not collector.frames:
        return ""
    end = max([f.started + f.seconds for f in collector.frames] + [b.at for b in collector.breaks]) or 1.0
    width, row = 900, 16
    height = row * len(collector.frames) + 24
    bars = []
    for i, frame in enumerate(collector.frames):
        x = 120 + frame.started / end * (width - 130)
        w = max(frame.seconds / end * (width - 130), 1.5)
        y = 4 + i * row
        bars.append(f'<text x="0" y="{y + 11}" font-size="11">{_e(frame.compile_id)} {_e(frame.name[:12])}</text>'
                    f'<rect class="bar" x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row - 4}">'
                    f'<title>{_e(frame.compile_id)} {_e(frame.name)}: {frame.seconds * 1000:.1f} ms</title></rect>')
    for brk in collector.breaks:
        x = 120 + brk.at / end * (width - 130)
        bars.append(f'<rect class="bar break" x="{x:.1f}" y="{height - 18}" width="2" height="14">'
                    f'<title>break: {_e(brk.gb_type)}</title></rect>')
    axis = f'<text x="120" y="{height - 2}" font-size="11">0 s</text>' \
           f'<text x="{width - 60}" y="{height - 2}" font-size="11">{end:.2f} s</text>'
    return (f'<h2>Timeline</h2><svg id="timeline" width="{width}" height="{height}" '
            f'xmlns="http://www.w3.org/2000/svg">{"".join(bars)}{axis}</svg>')


def _snippet(filename: str, lineno: int, around: int = 2) -> str:
    lines = []
    for number in range(max(1, lineno - around), lineno + around + 1):
        text = linecache.getline(filename, number)
        if not text:
            continue
        mark = " brk" if number == lineno else ""
        lines.append(f'<span class="line{mark}"><span class="num">{number}</span>{_e(text.rstrip())}</span>')
    return f"<pre>{''.join(lines)}</pre>" if lines else ""


def _break(index: int, brk: BreakRecord) -> str:
    where = f"{brk.user_stack[-1][0]}:{brk.user_stack[-1][1]}" if brk.user_stack else brk.code_name
    parts = [f'<details class="break" id="break-{index}"><summary><span class="gb">{_e(brk.gb_type)}</span> '
             f'{_e(brk.compile_id)} at {_e(where)}</summary>',
             f"<p>{_e(brk.reason)}" + (" <b>(the whole frame ran eagerly)</b>" if brk.whole_frame else "") + "</p>"]
    if brk.explanation:
        parts.append(f"<p class='muted'>{_e(brk.explanation)}</p>")
    parts += [f"<p><b>Hint:</b> {_e(hint)}</p>" for hint in brk.hints]
    for filename, lineno, name in brk.user_stack:
        parts.append(f"<div>{_e(filename)}:{lineno} in <b>{_e(name)}</b></div>{_snippet(filename, lineno)}")
    if not brk.whole_frame:
        parts.append(f"<p class='muted'>The code after it runs in a resume function made from "
                     f"{_e(brk.code_name)} (resume_in_{_e(brk.code_name)}), compiled when first called.</p>")
    parts.append("</details>")
    return "".join(parts)


def _graph(index: int, graph: GraphRecord) -> str:
    rows = [[n.name, n.op, n.target, n.value, n.user_line] for n in graph.nodes]
    return (f"<details class='graph'><summary>graph {index + 1}: {graph.ops} ops</summary>"
            f"<pre>{_e(graph.code)}</pre>{_table(['node', 'op', 'target', 'value', 'user line'], rows)}</details>")


def _frame(index: int, frame: FrameRecord) -> str:
    captured = {int(n.user_line.split(":")[-1].split(" in ")[0])
                for g in frame.graphs for n in g.nodes
                if n.user_line.startswith(frame.filename + ":") and n.user_line.split(":")[-1].split(" in ")[0].isdigit()}
    broken = {s[1] for b in frame.breaks for s in b.user_stack[-1:] if s[0] == frame.filename}
    source = []
    for number, text in source_lines(frame.filename, frame.firstlineno):
        mark = " hit" if number in captured else (" brk" if number in broken else "")
        source.append(f'<span class="line{mark}"><span class="num">{number}</span>{_e(text)}</span>')
    phases = _table(["phase", "ms"], [[k, f"{v * 1000:.2f}"] for k, v in frame.phases.items()])
    guards = _table(["guard", "user line"], [[g, line] for g, line in frame.guards])
    parts = [f'<details class="frame" id="frame-{index}"><summary>{_e(frame.compile_id)} {_e(frame.name)} '
             f'<span class="muted">{_e(frame.filename)}:{frame.firstlineno} · {frame.seconds * 1000:.1f} ms · '
             f'{len(frame.graphs)} graph(s) · {len(frame.breaks)} break(s)</span></summary>']
    if frame.recompile_reason is not None:
        parts.append(f"<p><b>Recompiled because this guard failed:</b> <code>{_e(frame.recompile_reason)}</code></p>")
    if source:
        parts.append("<h3>Source</h3><p class='muted'>green: lines with ops in the graphs; red: a graph break</p>"
                     f"<pre>{''.join(source)}</pre>")
    parts.append(f"<h3>Phases</h3>{phases}")
    parts += [_graph(i, g) for i, g in enumerate(frame.graphs)]
    parts.append(f"<details class='guards'><summary>{len(frame.guards)} guards</summary>{guards}</details>")
    parts.append("<details class='bytecode'><summary>bytecode: original and modified</summary><div class='side'>"
                 f"<div><b>ORIGINAL</b><pre>{_e(frame.original)}</pre></div>"
                 f"<div><b>MODIFIED</b><pre>{_e(frame.modified or '(no longer cached)')}</pre></div></div></details>")
    if frame.python:
        views = "".join(f"<p><b>{_e(title)}</b></p><pre>{_e(source)}</pre>" for title, source in frame.python)
        parts.append(f"<details class='python'><summary>as Python: the replacement code and its resume functions"
                     f"</summary>{views}</details>")
    parts.append("</details>")
    return "".join(parts)


def render(collector: Collector, title: str = "framegraph report") -> str:
    collector.finish()
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(collector.began_wall))
    body = [_summary(collector),
            f"<section id='breaks'><h2>Graph breaks ({len(collector.breaks)})</h2>"
            + "".join(_break(i, b) for i, b in enumerate(collector.breaks)) + "</section>",
            f"<section id='frames'><h2>Compiled frames ({len(collector.frames)})</h2>"
            + "".join(_frame(i, f) for i, f in enumerate(collector.frames)) + "</section>"]
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{_e(title)}</title>"
            f"<style>{STYLE}</style></head><body><header><h1>{_e(title)}</h1><div>{_e(when)}</div></header>"
            "<main><div id='controls'><button id='expand'>expand all</button>"
            "<button id='collapse'>collapse all</button></div>"
            f"{''.join(body)}</main><script>{SCRIPT}</script></body></html>")
