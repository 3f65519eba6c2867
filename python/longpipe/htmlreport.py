"""``longpipe report DIR``: one self-contained HTML page (tables and figures, images
embedded as data URIs) for a run directory (``run --out``), a sweep directory or a
reproduction (``reproduce --out``)."""

from __future__ import annotations

import base64
import html
import io
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._io import atomic_write_text
from .api import ScenarioError

if TYPE_CHECKING:
    from ._results import SimResult

CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;
color:#1a1a1a}
h1{font-size:1.6em;border-bottom:2px solid #ddd;padding-bottom:.2em}h2{font-size:1.25em;margin-top:1.6em}
table{border-collapse:collapse;margin:.8em 0;font-size:13px}th,td{border:1px solid #ccc;padding:3px 8px;
text-align:right}th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
pre{background:#f6f6f6;padding:.7em;overflow-x:auto;font-size:12.5px;line-height:1.3}
code{background:#f3f3f3;padding:0 3px}figure{margin:1.2em 0}img{max-width:100%;border:1px solid #eee}
figcaption{font-size:13px;color:#555}.meta{color:#555;font-size:13px}
"""


def _e(x: Any) -> str:
    return html.escape(str(x))


def _img(data: bytes, caption: str) -> str:
    b64 = base64.b64encode(data).decode("ascii")
    return f'<figure><img src="data:image/png;base64,{b64}" alt="{_e(caption)}"><figcaption>{_e(caption)}' \
           "</figcaption></figure>"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def markdown(text: str) -> str:
    """A reproduction's ``report.md`` as HTML: CommonMark with pipe tables (markdown-it-py),
    raw HTML escaped, headings one level down (the page title is the only ``h1``)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(text)
    for t in tokens:
        if t.type in ("heading_open", "heading_close"):
            t.tag = f"h{min(int(t.tag[1:]) + 1, 6)}"
    return str(md.renderer.render(tokens, md.options, {}))


def _page(title: str, body: str) -> str:
    from . import __version__

    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(title)}</title>"
            f"<style>{CSS}</style></head><body><h1>{_e(title)}</h1>\n{body}\n"
            f"<p class=\"meta\">Made by longpipe {_e(__version__)}.</p></body></html>\n")


#: The largest file a report reads (a result of 10^6 flows is some hundreds of MB).
MAX_INPUT_BYTES = 1024 * 1024 * 1024


def _read(p: Path) -> bytes:
    """A regular file's bytes (never a FIFO or device, which would hang), or a one-line
    ScenarioError naming it."""
    from ._io import NotReadable, read_regular_file

    try:
        return read_regular_file(p, MAX_INPUT_BYTES)
    except NotReadable as e:
        raise ScenarioError(str(p), "(file)", str(e)) from None


def _pngs(d: Path, skip: Sequence[str] = ()) -> list[str]:
    return [_img(_read(p), p.name) for p in sorted(d.glob("*.png")) if p.name not in skip]


def _fig_bytes(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


def run_body(d: Path) -> tuple[str, str]:
    try:
        data = json.loads(_read(d / "result.json"))
        return _run_body(d, data)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        if isinstance(e, ScenarioError):
            raise
        raise ScenarioError(str(d / "result.json"), "(file)", f"not a longpipe result ({type(e).__name__}: "
                            f"{str(e)[:60]})") from None


def _run_body(d: Path, data: SimResult) -> tuple[str, str]:
    from .report import format_result

    parts = [f"<p class=\"meta\">scenario <b>{_e(data['scenario'])}</b>, seed {_e(data['seed'])}, "
             f"{data['duration_s']:g} s simulated</p>"]
    parts.append("<h2>Flows</h2>")
    fl = ["id", "src", "dst", "tcp", "goodput_bps", "bytes_delivered", "segments_sent", "retransmitted_segments",
          "timeouts", "fast_recoveries", "completion_time_s", "mean_rtt_s"]
    parts.append(_table(fl, [[f["id"], f["src"], f["dst"], f["tcp"], f["goodput_bps"], f["bytes_delivered"],
                              f["segments_sent"], f["retransmitted_segments"], f["timeouts"], f["fast_recoveries"],
                              _blank(f["completion_time_s"]), _blank(f["mean_rtt_s"])] for f in data["flows"]]))
    parts.append("<h2>Links</h2>")
    ll = ["a", "b", "dir", "utilization", "packets", "drops_queue", "drops_loss", "max_queue_packets"]
    parts.append(_table(ll, [[lk["a"], lk["b"], lk["dir"], lk["utilization"], lk["packets"], lk["drops_queue"],
                              lk["drops_loss"], lk["max_queue_packets"]] for lk in data["links"]]))
    if data.get("nodes"):
        parts.append("<h2>Nodes</h2>")
        parts.append(_table(["name", "kind", "ipv4"], [[n["name"], n["kind"], n["ipv4"]] for n in data["nodes"]]))
    parts.append("<h2>As printed by longpipe run</h2><pre>" + _e(format_result(data)) + "</pre>")
    figs = _pngs(d)
    ts = sorted(d.glob("flow*-timeseries.csv"))
    if ts:
        import pandas as pd
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=(9, 4))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        for p in ts:
            try:
                t = pd.read_csv(io.BytesIO(_read(p)))
                x, y = t["t"].astype(float), t["cwnd"].astype(float) / 1e3
            except (KeyError, TypeError, ValueError, UnicodeDecodeError) as e:
                if isinstance(e, ScenarioError):
                    raise
                raise ScenarioError(str(p), "(file)", f"not a longpipe time series ({type(e).__name__})") from None
            ax.step(x, y, where="post", lw=0.9, label=p.name.split("-")[0])
        ax.set_xlabel("time (s)")
        ax.set_ylabel("cwnd (kB)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title(f"{data['scenario']}: congestion window, seed {data['seed']}")
        fig.tight_layout()
        figs.insert(0, _img(_fig_bytes(fig), "congestion window over time (from the time-series CSVs)"))
    wl = workload_tables(d, data)
    if wl:
        from .plots import workload_figure

        wfig = workload_figure({data["scenario"]: wl}, f"{data['scenario']}: applications, seed {data['seed']}")
        if wfig is not None:
            figs.insert(0, _img(_fig_bytes(wfig), "distributions of page load, response and completion times, "
                                "FCT against size, and per-user goodput (from the tables' CSVs)"))
    if figs:
        parts.append("<h2>Figures</h2>" + "".join(figs))
    return f"longpipe run: {data['scenario']}", "\n".join(parts)


def _blank(x: object) -> object:
    return "" if x is None else x


def workload_tables(d: Path, data: SimResult) -> dict[str, Any]:
    """The applications' tables a run directory holds (``pages.csv``...) and its users."""
    from .workload import TABLES, users

    if not data.get("workload"):
        return {}
    import pandas as pd

    out: dict[str, Any] = {t: pd.read_csv(d / f"{t}.csv") for t in TABLES if (d / f"{t}.csv").exists()}
    out["users"] = users(data)
    return out


def sweep_body(d: Path) -> tuple[str, str]:
    from .profiles import columns, warning
    from .sweeps.api import describe, load
    from .sweeps.plot import _numeric
    from .sweeps.summary import point_profiles, summarize, table_rows

    sw = load(d)
    parts = [f"<p class=\"meta\">{_e(describe(sw))}; {len(sw.rows)} runs stored</p>"]
    summ = summarize(sw.rows, sw.axes)
    headers, cells = table_rows(summ, sw.axes)
    profiles = point_profiles(sw.rows, sw.axes)  # the TCP profile of flow 0 at each point
    pheads, pcells = columns(profiles)
    n = len(sw.axes)
    headers = headers[:n] + pheads + headers[n:]
    cells = [c[:n] + pc + c[n:] for c, pc in zip(cells, pcells)]
    parts.append("<h2>Mean ± 95 % confidence interval over seeds</h2>" + _table(headers, cells))
    mixed = warning(profiles, [a.key for a in sw.axes])
    if mixed:
        parts.append(f"<p class=\"meta\"><strong>{_e(mixed)}</strong></p>")
    figs = []
    axes = sw.axes
    import tempfile

    for a in axes:
        if len(a.values) < 2 or _numeric(list(a.values)) is None:
            continue
        others = [o for o in axes if o.key != a.key and len(o.values) > 1]
        hue = min(others, key=lambda o: len(o.values)).key if others else None
        with tempfile.TemporaryDirectory() as tmp:
            p = sw.plot(a.key, "goodput", hue, Path(tmp) / "f.png")
            figs.append(_img(p.read_bytes(), f"goodput vs {a.key}" + (f" by {hue}" if hue else "")))
    # a figure drawn before the newest stored run (by `longpipe plot` on a smaller sweep)
    # would show other data beside the tables: left out, and named
    from .sweeps.store import Store

    newest = max((os.lstat(p).st_mtime_ns for p in Store(d).listing().files()), default=0)  # parts and journals
    pngs = sorted(d.glob("*.png"))
    stale = [p.name for p in pngs if p.stat().st_mtime_ns < newest]
    figs += [_img(_read(p), p.name) for p in pngs if p.name not in stale]
    if figs:
        parts.append("<h2>Figures</h2>" + "".join(figs))
    if stale:
        parts.append(f"<p class=\"meta\">Not shown, older than the newest stored run (drawn from fewer runs): "
                     f"{_e(', '.join(stale))}; draw them again with longpipe plot {_e(str(d))}.</p>")
    parts.append("<h2>Scenario</h2><pre>" + _e(json.dumps(sw.manifest.get("scenario"), indent=2)) + "</pre>")
    return f"longpipe sweep: {sw.name}", "\n".join(parts)


def reproduction_body(d: Path) -> tuple[str, str]:
    try:
        text = _read(d / "report.md").decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(str(d / "report.md"), "(file)", f"not UTF-8 text (byte {e.start})") from None
    m = re.match(r"^#\s+(.*)$", text.splitlines()[0]) if text else None
    title = m[1] if m else d.name
    body = markdown("\n".join(text.splitlines()[1:]) if m else text)
    figs = _pngs(d)
    if figs:
        body += "<h2>Figures</h2>" + "".join(figs)
    return title, body


def write_report(d: Path, out: Path | None = None) -> Path:
    """Writes the page (default ``DIR/report.html``) and returns its path."""
    if not d.is_dir():
        raise ScenarioError(str(d), "(directory)", "no such directory")
    if (d / "sweep.json").exists():
        title, body = sweep_body(d)
    elif (d / "result.json").exists():
        title, body = run_body(d)
    elif (d / "report.md").exists():
        title, body = reproduction_body(d)
    else:
        raise ScenarioError(str(d), "(directory)", "expected the output of run --out (result.json), sweep "
                            "(sweep.json) or reproduce (report.md)")
    return atomic_write_text(out or d / "report.html", _page(title, body))
