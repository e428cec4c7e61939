"""Write a self-contained HTML page of a cassette: one swimlane per worker on a time axis.

Each entry is a box whose left edge is when it started and whose width is how long it
took, coloured by boundary; a nested call sits one row below its parent. Hovering a box
shows its one-line summary; clicking it shows its recorded data (long strings clipped) with
links to its parent and children, which are highlighted. With ``--replay-report`` (the JSON
a replay wrote with ``ReplayReport.to_json()``), the entries where the replay diverged are
red and carry the mismatch message. CSS, script and data are inline: the page needs no
network. Everything recorded is escaped: it is user data.
"""

from __future__ import annotations

import argparse
import html
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import msgspec

from ..cassette import Entry, Recording, boundary_of, load
from ..report import ReplayReport, describe, format_ms
from ._common import (
    CallTree,
    CommandError,
    Progress,
    call_duration,
    entry_data,
    plural,
    recorded_duration,
    relative_ns,
    write_atomic,
)

__all__ = ["SUMMARY", "add_arguments", "page", "run"]

SUMMARY: Final = "write a self-contained HTML page: swimlanes per worker, mismatches marked"

# Where the entries' JSON goes in the page. Only the page's own script follows it, so the
# last occurrence is the placeholder even if recorded text held the same characters.
_DATA: Final = "\x00DATA\x00"

#: Past this many entries a browser draws the page slowly; the command says so.
BIG_PAGE: Final = 50_000

#: Strings longer than this are clipped in the page's entry details (the cassette has them).
CLIP: Final = 2000

_PALETTE: Final = (
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2",
    "#edc948", "#9c755f", "#bab0ac", "#ff9da7", "#86bcb6",
)  # fmt: skip
# Entries of no boundary (header, snapshots, error, end); parentheses keep it apart from
# a user's boundary names.
_META: Final = "(session)"
_META_COLOR: Final = "#888888"

_CSS: Final = """
body{font:13px/1.4 system-ui,sans-serif;margin:1em;color:#222}
h1{font-size:1.3em;margin:0 0 .5em}
table.info td{padding:1px 8px 1px 0;vertical-align:top}
table.info td:first-child{color:#666}
.legend span{display:inline-block;margin-right:1em}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
.mismatches li{color:#b00;cursor:pointer}
#lanes{overflow-x:auto;border:1px solid #ddd;margin-top:.5em}
.lane{display:flex;border-top:1px solid #eee}
.lane-name{flex:0 0 9em;padding:2px 4px;background:#fafafa;position:sticky;left:0;z-index:2;
overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.track,.axis{position:relative;flex:1 0 auto;min-height:18px}
.axis{height:18px;color:#666;font-size:11px}
.tick{position:absolute;top:0;border-left:1px solid #ccc;padding-left:2px;height:100%}
.box{position:absolute;height:14px;min-width:2px;border-radius:2px;cursor:pointer;opacity:.85}
.box.bad{outline:2px solid #d00;background:#d00!important;opacity:1}
.box.sel{outline:2px solid #000;opacity:1;z-index:1}
.box.rel{outline:2px dashed #000;opacity:1}
#detail{white-space:pre-wrap;background:#f6f6f6;padding:.5em;max-height:40em;overflow:auto}
#links button{margin-right:.3em}
"""

_JS: Final = """
(function(){
const D=JSON.parse(document.getElementById('st-data').textContent);
const total=Math.max(D.duration,1),ROW=16,boxes=new Map(),bySeq=new Map();
let zoom=1,selected=null;
D.entries.forEach(e=>bySeq.set(e.seq,e));
function fmt(ns){return (ns/1e9).toFixed(ns<1e10?3:1)+'s'}
function axis(){
  const ax=document.getElementById('axis');ax.textContent='';
  const raw=total/(10*zoom),p=Math.pow(10,Math.floor(Math.log10(raw)));
  const step=[1,2,5,10].map(m=>m*p).find(s=>s>=raw);
  for(let t=0;t<=total;t+=step){const d=document.createElement('div');d.className='tick';
    d.style.left=(t/total*100)+'%';d.textContent='+'+fmt(t);ax.appendChild(d);}
}
function draw(){
  document.querySelectorAll('.track,.axis').forEach(t=>t.style.width=(zoom*100)+'%');
  if(boxes.size)return;
  const tracks={};document.querySelectorAll('.lane[data-worker]').forEach(l=>
    tracks[l.dataset.worker]=l.querySelector('.track'));
  const rows={};
  D.entries.forEach(e=>{
    const b=document.createElement('div');b.className='box'+(e.mismatch?' bad':'');
    b.style.left=(e.start/total*100)+'%';b.style.width=(e.dur/total*100)+'%';
    b.style.top=(1+e.depth*ROW)+'px';b.style.background=D.colors[e.color];
    b.title=e.summary+(e.mismatch?'\\n'+e.mismatch.join('\\n'):'');
    b.onclick=()=>select(e.seq);boxes.set(e.seq,b);
    const t=tracks[e.worker];t.appendChild(b);
    rows[e.worker]=Math.max(rows[e.worker]||0,e.depth+1);
  });
  for(const w in rows)tracks[w].style.height=(rows[w]*ROW+4)+'px';
}
function select(seq){
  document.querySelectorAll('.box.sel,.box.rel').forEach(b=>b.classList.remove('sel','rel'));
  const e=bySeq.get(seq);if(!e)return;selected=seq;
  boxes.get(seq).classList.add('sel');boxes.get(seq).scrollIntoView({block:'nearest',inline:'center'});
  const links=document.getElementById('links');links.textContent='';
  const rel=(label,s)=>{const b=document.createElement('button');b.textContent=label+' '+s;
    b.onclick=()=>select(s);links.appendChild(b);const x=boxes.get(s);if(x)x.classList.add('rel');};
  if(e.parent!==null&&bySeq.has(e.parent))rel('parent',e.parent);
  (e.children||[]).forEach(c=>rel('child',c));
  const head=e.summary+(e.mismatch?'\\n\\nREPLAY MISMATCH:\\n'+e.mismatch.join('\\n'):'');
  document.getElementById('detail').textContent=head+'\\n\\n'+JSON.stringify(e.data,null,2);
}
document.getElementById('zoom-in').onclick=()=>{zoom*=2;draw();axis();};
document.getElementById('zoom-out').onclick=()=>{zoom=Math.max(1,zoom/2);draw();axis();};
document.querySelectorAll('[data-seq]').forEach(li=>li.onclick=()=>select(+li.dataset.seq));
draw();axis();
})();
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``report`` options."""
    parser.add_argument("path", metavar="PATH", help="the cassette to draw")
    parser.add_argument(
        "--replay-report",
        metavar="JSON",
        help="mark the mismatches of this replay report (ReplayReport.to_json() output)",
    )
    parser.add_argument(
        "-o", "--output", required=True, metavar="OUT.html", help="where to write the page"
    )


def _clip(value: Any) -> Any:
    if isinstance(value, str) and len(value) > CLIP:
        return f"{value[:CLIP]}… ({len(value) - CLIP} more characters in the cassette)"
    if isinstance(value, dict):
        return {k: _clip(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip(v) for v in value]
    return value


def _script_safe(data: bytes) -> bytes:
    """JSON that is safe inside a <script> element: no '<', '>' or '&' can end it early.

    Outside strings JSON has none of these characters; inside them the escapes mean the same.
    """
    return data.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")


def _entry_json(entry: Entry) -> msgspec.Raw:
    """The entry's recorded data for the details panel, strings over ``CLIP`` clipped."""
    raw = msgspec.json.encode(entry)
    if len(raw) <= CLIP:  # then no string in it can be longer: skip the walk
        return msgspec.Raw(raw)
    return msgspec.Raw(msgspec.json.encode(_clip(entry_data(entry))))


def _load_report(path: str, recording: Recording) -> ReplayReport:
    try:
        report = ReplayReport.from_json(Path(path).read_bytes())
    except OSError as exc:
        raise CommandError(f"cannot read the replay report {path}: {exc.strerror}.") from None
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise CommandError(
            f"{path} is not a replay report written by ReplayReport.to_json() ({exc})."
        ) from None
    if report.run_id != recording.header.run_id:
        raise CommandError(
            f"the replay report {path} is of run {report.run_id}, the cassette "
            f"{recording.path} of run {recording.header.run_id}; pass the report of a "
            "replay of this cassette."
        )
    return report


def page(recording: Recording, report: ReplayReport | None = None) -> Iterator[bytes]:
    """The page for ``recording`` with ``report``'s mismatches marked, in chunks.

    The entries are encoded one at a time, so a big tape never exists as one page in memory.
    """
    tree = CallTree(recording.entries)
    marks: dict[int, list[str]] = {}
    for m in report.mismatches if report is not None else ():
        if m.seq is not None:
            marks.setdefault(m.seq, []).append(f"{m.kind.value}: {m.message}")
    # Session metadata is grey; each boundary gets the next colour as it first appears.
    colors: dict[str, str] = {_META: _META_COLOR}
    for entry in recording.entries:
        key = boundary_of(entry) or _META
        if key not in colors:
            colors[key] = _PALETTE[(len(colors) - 1) % len(_PALETTE)]
    workers = list(dict.fromkeys(entry.worker for entry in recording.entries))
    duration = recorded_duration(recording)
    head, tail = _page(recording, report, workers, colors, duration).rsplit(_DATA, 1)
    encode = msgspec.json.encode
    yield head.encode()
    yield _script_safe(b'{"duration":%d,"colors":%s,"entries":[' % (duration, encode(colors)))
    for index, entry in enumerate(Progress("report", len(recording)).iter(recording.entries)):
        box = {
            "seq": entry.seq,
            "worker": entry.worker,
            "parent": entry.parent,
            "children": tree.children.get(entry.seq),
            "depth": tree.depth[entry.seq],
            "start": relative_ns(entry, recording),
            "dur": call_duration(entry),
            "color": boundary_of(entry) or _META,
            "summary": describe(entry, width=120),
            "mismatch": marks.get(entry.seq),
            "data": _entry_json(entry),
        }
        yield _script_safe(encode(box) if index == 0 else b"," + encode(box))
    yield b"]}"
    yield tail.encode()


def _info_rows(recording: Recording, duration: int) -> list[tuple[str, str]]:
    header = recording.header
    state = "complete" if not recording.crashed else "crashed (no session_end)"
    rows = [
        ("run", header.run_id),
        ("entrypoint", header.entrypoint or "?"),
        ("recorded at", header.recorded_at),
        ("app version", header.app_version or "?"),
        ("host", f"{header.host} ({header.platform}, Python {header.python})"),
        ("level", header.level),
        ("duration", format_ms(duration)),
        ("entries", f"{len(recording)} ({len(recording.calls)} calls), {state}"),
    ]
    if header.config is not None:
        rows.append(("config", json.dumps(_clip(header.config), ensure_ascii=False)))
    return rows


def _page(
    recording: Recording,
    report: ReplayReport | None,
    workers: list[str],
    colors: dict[str, str],
    duration: int,
) -> str:
    """The page around the data, which goes where ``_DATA`` stands."""
    esc = html.escape
    info = "".join(
        f"<tr><td>{esc(name)}</td><td>{esc(value)}</td></tr>"
        for name, value in _info_rows(recording, duration)
    )
    legend = "".join(
        f'<span><i style="background:{color}"></i>{esc(name)}</span>'
        for name, color in colors.items()
    )
    mismatches = ""
    if report is not None:
        items = []
        for m in report.mismatches:
            seq = f' data-seq="{m.seq}"' if m.seq is not None else ""
            at = f"seq {m.seq}" if m.seq is not None else "an unrecorded call"
            items.append(
                f"<li{seq}><b>{esc(m.kind.value)}</b> at {at} ({esc(m.worker)}, "
                f"{esc(m.boundary)}): {esc(m.message)}</li>"
            )
        verdict = (
            "matched" if report.ok else f"diverged: {plural(len(items), 'mismatch', 'mismatches')}"
        )
        mismatches = f'<h2>replay {esc(verdict)}</h2><ul class="mismatches">{"".join(items)}</ul>'
    lanes = "".join(
        f'<div class="lane" data-worker="{esc(w)}"><div class="lane-name" title="{esc(w)}">'
        f'{esc(w)}</div><div class="track"></div></div>'
        for w in workers
    )
    title = esc(f"sessiontape: {recording.header.entrypoint or recording.header.run_id}")
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{_CSS}</style></head><body>\n"
        f'<h1>{title}</h1><table class="info">{info}</table>\n{mismatches}\n'
        f'<p class="legend">{legend} <button id="zoom-out">−</button>'
        f'<button id="zoom-in">+</button></p>\n'
        f'<div id="lanes"><div class="lane"><div class="lane-name">time</div>'
        f'<div class="axis" id="axis"></div></div>{lanes}</div>\n'
        f'<p id="links"></p><pre id="detail">Click a box to see its entry.</pre>\n'
        f'<script id="st-data" type="application/json">{_DATA}</script>\n'
        f"<script>{_JS}</script>\n</body></html>\n"
    )


def run(args: argparse.Namespace) -> int:
    """``sessiontape report``."""
    recording = load(args.path)
    report = _load_report(args.replay_report, recording) if args.replay_report else None
    write_atomic(args.output, page(recording, report))
    marked = sum(1 for m in report.mismatches if m.seq is not None) if report else 0
    workers = len({e.worker for e in recording.entries})
    extra = f", {plural(marked, 'mismatch', 'mismatches')} marked" if report is not None else ""
    print(
        f"wrote {args.output}: {plural(len(recording), 'entry', 'entries')} in "
        f"{plural(workers, 'swimlane')}{extra}."
    )
    if len(recording) > BIG_PAGE:
        print(
            f"note: browsers draw more than {BIG_PAGE:,} boxes slowly; cut a worker or a time "
            "window out with 'sessiontape slice' for a quicker page."
        )
    return 0
