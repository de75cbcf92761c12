"""``--html PATH``: the conformance report as one self-contained page for reviewers.

The page is written from the same data as ``--json`` (:meth:`Report.to_dict`,
or a JSON report read back), with each requirement's spec sentence from the
shipped index (``requirements.json``). It needs no network: the style and the
filter script are inline, and there are no fonts, images or scripts from
elsewhere. Every text of the report (store names, check messages, details) is
HTML-escaped, so a message holding ``<script>`` shows as text and never runs.

==================  ==========================================================
part                what it shows
==================  ==========================================================
banner              passed or failed, in one line: checks and requirement ids
                    failed, the "start here" line of a failing run (the
                    failure to fix first, diagnosis.py)
header              store, suite and spec version, profile, derandomized,
                    seed (when the report has one), when it was written, the
                    checks' time, the capabilities declared, the summary
filters             status buttons, a chapter menu, a text search (plain JS:
                    they hide rows, the data is all in the page)
chapters            one table per chapter: each requirement's id, level,
                    status, spec sentence and the checks that cover it
                    (a check that did not run is named only in rows that
                    are themselves not_run); a focused run lists only the
                    ids its checks cover and counts the others "not selected"
failures            (before the chapters, root cause first: the report's
                    ``failureOrder``) each failed check: its ids, message, reproduction (the
                    report's reproduction command when it has one, else the
                    lines of the detail that say how to reproduce), trace
                    vector file (when one was recorded) and full detail
==================  ==========================================================
"""

from __future__ import annotations

import datetime
import html
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final

from convledger_conformance.report import FAILED, REQUIREMENT_STATUSES
from convledger_conformance.requirements import Requirement, load_index

TRACE_MARKERS: Final = ("Trace vector of this failure:", "No trace vector was recorded:")
"""The lines of a check's detail that name its trace vector file, or why none was written."""
REPRODUCTION_KEYS: Final = ("reproduce", "reproduction", "command")
"""Members of a JSON check entry holding its reproduction command, when the report has one."""
_REPRODUCTION_LINE: Final = re.compile(
    r"reproduce_failure|--seed|convledger-conformance |[Rr]eproduc"
)

_STYLE: Final = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1b1f24;
background:#f6f8fa}
header,main{padding:12px 24px}header{background:#fff;border-bottom:1px solid #d0d7de}
h1{font-size:20px;margin:4px 0 8px}h2{font-size:16px;margin:18px 0 6px}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:0}
dl.meta dt{font-weight:600}dl.meta dd{margin:0}
.filters{position:sticky;top:0;background:#f6f8fa;padding:8px 0;border-bottom:1px solid #d0d7de;
display:flex;flex-wrap:wrap;gap:8px;align-items:center}
button{font:inherit;padding:3px 10px;border:1px solid #d0d7de;border-radius:6px;background:#fff;
cursor:pointer}button.active{background:#0969da;color:#fff;border-color:#0969da}
table{border-collapse:collapse;width:100%;background:#fff}
td,th{border:1px solid #d0d7de;padding:4px 8px;vertical-align:top;text-align:left}
td.id{white-space:nowrap;font-family:ui-monospace,monospace}
.status{font-weight:600;white-space:nowrap}.s-passed{color:#1a7f37}.s-failed{color:#cf222e}
.s-not_applicable{color:#6e7781}.s-not_run{color:#9a6700}
#banner{padding:10px 24px;font-size:16px;font-weight:600;color:#fff}
#banner.fail{background:#cf222e}#banner.pass{background:#1a7f37}
#banner p{margin:2px 0;font-weight:400;font-size:14px}
tr.st-failed{background:#ffebe9}.failure{background:#fff;border:1px solid #cf222e;
border-radius:6px;padding:8px 12px;margin:10px 0}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:8px;margin:4px 0;
font:12px/1.4 ui-monospace,monospace}.hidden{display:none}#shown{color:#57606a}
"""

_SCRIPT: Final = """
(function () {
  var status = "all";
  var rows = Array.prototype.slice.call(document.querySelectorAll("tr.req"));
  var chapters = Array.prototype.slice.call(document.querySelectorAll("section.chapter"));
  var menu = document.getElementById("chapter-filter");
  var search = document.getElementById("search");
  function apply() {
    var chapter = menu.value, words = search.value.toLowerCase().trim(), shown = 0;
    rows.forEach(function (row) {
      var visible = (status === "all" || row.dataset.status === status) &&
        (chapter === "all" || row.dataset.chapter === chapter) &&
        (words === "" || row.dataset.text.indexOf(words) !== -1);
      row.classList.toggle("hidden", !visible);
      if (visible) { shown += 1; }
    });
    chapters.forEach(function (section) {
      section.classList.toggle("hidden", !section.querySelector("tr.req:not(.hidden)"));
    });
    document.getElementById("shown").textContent = shown + " of " + rows.length + " shown";
  }
  document.querySelectorAll("button.status-filter").forEach(function (button) {
    button.addEventListener("click", function () {
      status = button.dataset.status;
      document.querySelectorAll("button.status-filter").forEach(function (other) {
        other.classList.toggle("active", other === button);
      });
      apply();
    });
  });
  menu.addEventListener("change", apply);
  search.addEventListener("input", apply);
  apply();
})();
"""


def render_html(
    report: Mapping[str, object],
    *,
    index: Sequence[Requirement] | None = None,
    written_at: datetime.datetime | None = None,
) -> str:
    """The page for one JSON report (:meth:`Report.to_dict`), as text."""
    sentences = {r.id: r.summary for r in (load_index() if index is None else index)}
    requirements = _entries(report.get("requirements"))
    checks = _entries(report.get("checks"))
    check_status = {_text(check.get("name")): _text(check.get("status")) for check in checks}
    when = written_at or datetime.datetime.now(datetime.UTC)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>convledger conformance: {_e(_text(report.get('store')))}</title>",
        f"<style>{_STYLE}</style></head><body>",
        _banner(report, requirements, checks),
        _header(report, when, checks),
        "<main>",
        _failures(_root_first(report, checks), _rerun(report)),
        _filters(requirements),
        *_chapters(requirements, sentences, check_status),
        "</main>",
        f"<script>{_SCRIPT}</script>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def write_html(report: Mapping[str, object], path: Path) -> None:
    """Write the page for ``report`` to ``path`` (UTF-8)."""
    path.write_text(render_html(report), "utf-8")


def seed_of(report: Mapping[str, object]) -> str | None:
    """The run's seed, where a report holds one (top level or in ``suite``), else None."""
    suite = report.get("suite")
    for holder in (report, suite if isinstance(suite, Mapping) else {}):
        value = holder.get("seed")
        if value is not None:
            return str(value)
    return None


def trace_lines(detail: str) -> list[str]:
    """The lines of a check's detail naming its trace vector, or why none was written."""
    return [line.strip() for line in detail.splitlines() if line.strip().startswith(TRACE_MARKERS)]


def reproduction_of(check: Mapping[str, object]) -> list[str]:
    """How to reproduce a failed check: the report's command, else the detail's lines saying so."""
    for key in REPRODUCTION_KEYS:
        value = check.get(key)
        if isinstance(value, str) and value:
            return [value]
        if isinstance(value, list) and value:
            return [_text(item) for item in value]
    detail = _text(check.get("detail"))
    return [
        line.strip() for line in detail.splitlines()
        if _REPRODUCTION_LINE.search(line) and not line.strip().startswith(TRACE_MARKERS)
    ]


def _banner(
    report: Mapping[str, object],
    requirements: Sequence[Mapping[str, object]],
    checks: Sequence[Mapping[str, object]],
) -> str:
    """One line that says at first sight whether the store passed, and where to start."""
    failed_checks = sum(check.get("status") == FAILED for check in checks)
    failed_ids = sum(r.get("status") == FAILED for r in requirements)
    unselected = len(_list(report.get("notSelected")))
    focus = f"; a focused run: {unselected} requirements not selected" if unselected else ""
    if failed_checks:
        start = _text(report.get("startHere"))
        return (
            f'<div id="banner" class="fail">FAILED: {failed_checks} checks failed, on '
            f"{failed_ids} requirement ids{_e(focus)}"
            + (f'<p id="start-here">{_e(start)}</p>' if start else "") + "</div>"
        )
    return (f'<div id="banner" class="pass">PASSED: no check failed ({len(checks)} checks, '
            f"{sum(r.get('status') == 'passed' for r in requirements)} requirements "
            f"passed){_e(focus)}</div>")


def _root_first(
    report: Mapping[str, object], checks: Sequence[Mapping[str, object]]
) -> list[Mapping[str, object]]:
    """The checks, the failed ones in the report's root-cause order when it gives one."""
    order = {_text(name): place for place, name in enumerate(_list(report.get("failureOrder")))}
    return sorted(checks, key=lambda check: order.get(_text(check.get("name")), len(order)))


def _header(
    report: Mapping[str, object], when: datetime.datetime, checks: Sequence[Mapping[str, object]]
) -> str:
    suite = report.get("suite")
    info: Mapping[str, object] = suite if isinstance(suite, Mapping) else {}
    capabilities = report.get("capabilities")
    declared = ", ".join(_text(c) for c in capabilities) if isinstance(capabilities, list) else ""
    summary = report.get("summary")
    counts = summary if isinstance(summary, Mapping) else {}
    seconds = sum(_number(check.get("durationSeconds")) for check in checks)
    seed = seed_of(report)
    rows = [
        ("store", _text(report.get("store"))),
        ("suite", f"{_text(info.get('name'))} {_text(info.get('version'))} "
                  f"(spec {_text(info.get('specVersion'))})"),
        ("profile", _text(info.get("profile"))),
        ("derandomized", "yes" if info.get("derandomize") else "no"),
        ("seed", seed if seed is not None else "(not in this report)"),
        ("written", when.strftime("%Y-%m-%d %H:%M:%S UTC")),
        ("time", f"{len(checks)} checks in {seconds:.1f} s"),
        ("capabilities declared", declared or "(none)"),
        ("summary", ", ".join(f"{_text(counts.get(s, 0))} {s}" for s in REQUIREMENT_STATUSES)
         + (f", {len(_list(report.get('notSelected')))} not selected"
            if report.get("notSelected") else "")),
    ]
    items = "".join(
        f'<dt>{_e(name)}</dt><dd id="meta-{_e(name.split()[0])}">{_e(value)}</dd>'
        for name, value in rows
    )
    return f"<header><h1>convledger conformance report</h1><dl class=\"meta\">{items}</dl></header>"


def _filters(requirements: Sequence[Mapping[str, object]]) -> str:
    counts = {status: 0 for status in REQUIREMENT_STATUSES}
    for requirement in requirements:
        status = _text(requirement.get("status"))
        counts[status] = counts.get(status, 0) + 1
    buttons = [
        '<button class="status-filter active" data-status="all">'
        f"all ({len(requirements)})</button>",
        *(
            f'<button class="status-filter" data-status="{_e(status)}">'
            f"{_e(status)} ({count})</button>"
            for status, count in counts.items()
        ),
    ]
    chapters = _chapter_names(requirements)
    options = "".join(f'<option value="{_e(c)}">{_e(c)}</option>' for c in chapters)
    return (
        '<div class="filters">'
        + "".join(buttons)
        + '<label>chapter <select id="chapter-filter"><option value="all">all</option>'
        + options
        + '</select></label><label>search <input id="search" type="search" '
        + 'placeholder="id, sentence or check"></label><span id="shown"></span></div>'
    )


def _chapters(
    requirements: Sequence[Mapping[str, object]],
    sentences: Mapping[str, str],
    check_status: Mapping[str, str],
) -> Iterable[str]:
    for chapter in _chapter_names(requirements):
        members = [r for r in requirements if _text(r.get("chapter")) == chapter]
        tally = {status: 0 for status in REQUIREMENT_STATUSES}
        for member in members:
            tally[_text(member.get("status"))] = tally.get(_text(member.get("status")), 0) + 1
        said = ", ".join(f"{count} {status}" for status, count in tally.items() if count)
        yield (
            f'<section class="chapter" data-chapter="{_e(chapter)}"><h2>{_e(chapter)} '
            f"<small>({_e(said)})</small></h2><table><thead><tr><th>id</th><th>level</th>"
            "<th>status</th><th>spec sentence</th><th>checks</th></tr></thead><tbody>"
        )
        for member in members:
            yield _requirement_row(member, sentences, check_status)
        yield "</tbody></table></section>"


def _requirement_row(
    requirement: Mapping[str, object],
    sentences: Mapping[str, str],
    check_status: Mapping[str, str],
) -> str:
    ident = _text(requirement.get("id"))
    status = _text(requirement.get("status"))
    chapter = _text(requirement.get("chapter"))
    names = [_text(name) for name in _list(requirement.get("checks"))]
    if status != "not_run":  # a check that did not run says something only where nothing ran
        names = [name for name in names if check_status.get(name) != "not_run"]
    sentence = sentences.get(ident, "(not in this suite's requirement index)")
    covering = ", ".join(
        f'<a href="#check-{_e(name)}">{_e(name)}</a> <span class="s-failed">(failed)</span>'
        if check_status.get(name) == FAILED
        else f'{_e(name)} <span class="s-{_e(check_status.get(name, ""))}">'
        f"({_e(check_status.get(name, 'not in report'))})</span>"
        for name in names
    ) or "(no check)"
    text = " ".join([ident, status, sentence, *names]).lower()
    return (
        f'<tr class="req st-{_e(status)}" id="req-{_e(ident)}" data-status="{_e(status)}" '
        f'data-chapter="{_e(chapter)}" data-text="{_e(text)}"><td class="id">{_e(ident)}</td>'
        f"<td>{_e(_text(requirement.get('level')))}</td>"
        f'<td class="status s-{_e(status)}">{_e(status)}</td><td>{_e(sentence)}</td>'
        f"<td>{covering}</td></tr>"
    )


def _rerun(report: Mapping[str, object]) -> str:
    suite = report.get("suite")
    info: Mapping[str, object] = suite if isinstance(suite, Mapping) else {}
    return (
        f"this report names no reproduction for this check: run the suite again on "
        f"{_text(report.get('store'))} at profile {_text(info.get('profile'))}"
        + (" with --derandomize" if info.get("derandomize") else "")
    )


def _failures(checks: Sequence[Mapping[str, object]], rerun: str) -> str:
    failed = [check for check in checks if check.get("status") == FAILED]
    if not failed:
        return '<section id="failures"><h2>Failures</h2><p>No check failed.</p></section>'
    blocks = []
    for place, check in enumerate(failed):
        name = _text(check.get("name"))
        detail = _text(check.get("detail"))
        ids = ", ".join(_text(i) for i in _list(check.get("failedIds")))
        reproduction = reproduction_of(check)
        traces = trace_lines(detail)
        blocks.append(
            f'<div class="failure" id="check-{_e(name)}"><h3>'
            + ("start here: " if place == 0 else "") + f'{_e(name)} '
            f'<small class="s-failed">[{_e(ids)}]</small></h3>'
            f'<p class="message">{_e(_text(check.get("message")))}</p>'
            + (f'<p class="divergence">first diverging operation: '
               f'{_e(_text(check.get("firstDivergence")))}</p>'
               if check.get("firstDivergence") else "")
            + (
                '<p>reproduce:</p><pre class="reproduce">'
                + _e("\n".join(reproduction)) + "</pre>"
                if reproduction else f'<p class="reproduce">reproduce: {_e(rerun)}</p>'
            )
            + (
                '<p>trace:</p><pre class="trace">' + _e("\n".join(traces)) + "</pre>"
                if traces else "<p>trace: none recorded (run with --record-failures DIR)</p>"
            )
            + f"<details><summary>detail</summary><pre>{_e(detail)}</pre></details></div>"
        )
    return (
        f'<section id="failures"><h2>Failures, root cause first ({len(failed)} checks failed, '
        f'on {len({i for c in failed for i in _list(c.get("failedIds"))})} requirement ids)'
        "</h2>"
        + "".join(blocks) + "</section>"
    )


def _chapter_names(requirements: Sequence[Mapping[str, object]]) -> list[str]:
    return list(dict.fromkeys(_text(r.get("chapter")) for r in requirements))


def _entries(value: object) -> list[Mapping[str, object]]:
    return [item for item in _list(value) if isinstance(item, Mapping)]


def _list(value: object) -> list[object]:
    return list(value) if isinstance(value, list | tuple) else []


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _e(text: str) -> str:
    return html.escape(text, quote=True)
