"""``convledger-conformance --html``: the reviewers' page, rendered in a real headless Chromium.

The report is a real run, through the console script in a subprocess, of a
deliberately broken store of the ledger gallery (EventIdsUniquePerConversation,
LED-003), so some requirements fail, some pass and the capabilities it does
not declare are not applicable. The browser is Debian's ``chromium`` driven by
``chromium-driver`` over W3C WebDriver (``tests/webdriver.py``); under
``CI=true`` a missing browser or driver is a failure, elsewhere a skip with
one line.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from convledger_conformance.html_report import render_html, reproduction_of, seed_of
from galleries import gallery
from webdriver import Browser, browser_paths

TESTS = Path(__file__).resolve().parent
BROKEN = next(item for item in gallery("ledger") if item.name == "EventIdsUniquePerConversation")
HOSTILE = "<script>window.__pwned = 1;</script><img src=x onerror=\"window.__pwned = 2\">"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One real CLI run of the broken store: its JSON report, HTML page and folder."""
    folder = tmp_path_factory.mktemp("html-report")
    command = [
        str(Path(sys.executable).with_name("convledger-conformance")),
        "--store", f"galleries.ledger:{BROKEN.name}",
        "--profile", "smoke", "--derandomize", "--no-shrink",
        "--json", str(folder / "report.json"), "--html", str(folder / "report.html"),
    ]
    environment = {**os.environ, "PYTHONPATH": str(TESTS)}
    done = subprocess.run(command, cwd=folder, env=environment, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 1, done.stderr[-2000:]
    report = json.loads((folder / "report.json").read_text("utf-8"))
    failed = {r["id"] for r in report["requirements"] if r["status"] == "failed"}
    assert set(BROKEN.catches) <= failed  # the precondition: the run did fail requirements
    statuses = {r["status"] for r in report["requirements"]}
    assert {"passed", "failed", "not_applicable"} <= statuses
    return {"folder": folder, "report": report, "page": folder / "report.html"}


def test_the_page_holds_the_report(run: dict[str, Any]) -> None:
    page = run["page"].read_text("utf-8")
    report = run["report"]
    for requirement in report["requirements"]:
        assert f'id="req-{requirement["id"]}"' in page
    assert page.count('<tr class="req ') == len(report["requirements"])
    failed_checks = [c for c in report["checks"] if c["status"] == "failed"]
    assert failed_checks and all(f'id="check-{c["name"]}"' in page for c in failed_checks)
    # Hypothesis' reproduction where it gave one, else how to run the same suite again.
    reproducible = [c for c in failed_checks if reproduction_of(c)]
    assert reproducible and all(_escaped(reproduction_of(c)[0]) in page for c in reproducible)
    assert page.count('class="reproduce"') == len(failed_checks)
    assert reproduction_of({"detail": "", "reproduce": "convledger-conformance -k x"}) == [
        "convledger-conformance -k x"
    ]
    # The spec sentence of each failed id, from requirements.json.
    sentences = _sentences()
    for ident in BROKEN.catches:
        assert _escaped(sentences[ident]) in page


def test_the_page_needs_no_network() -> None:
    page = render_html(_hostile({"requirements": [], "checks": [], "store": "s"}))
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//|@import|url\(|<link""", page)
    assert page.count("<script>") == 1  # the one inline filter script


def test_hostile_text_is_escaped(run: dict[str, Any]) -> None:
    page = render_html(_hostile(run["report"]))
    assert "<script>window.__pwned" not in page and "<img src=x" not in page
    assert _escaped(HOSTILE) in page


def test_seed_is_read_wherever_the_report_keeps_it() -> None:
    assert seed_of({"suite": {"profile": "ci"}}) is None
    assert seed_of({"seed": 1234}) == "1234"
    assert seed_of({"suite": {"seed": 99}}) == "99"
    page = render_html({"suite": {"seed": 4242}, "requirements": [], "checks": []})
    assert re.search(r'id="meta-seed">4242<', page)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """A headless Chromium (Debian's chromium + chromium-driver), over W3C WebDriver."""
    chromium, chromedriver = browser_paths()
    if chromium is None or chromedriver is None:
        problem = "chromium or chromedriver is not on PATH (apt-get install chromium " \
            "chromium-driver)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"the HTML report's browser test needs a browser: {problem}")
        pytest.skip(f"no headless browser: {problem}")
    driver = Browser(chromium, chromedriver)
    try:
        yield driver
    finally:
        driver.quit()


def test_the_page_in_a_real_browser(
    run: dict[str, Any], browser: Browser, tmp_path: Path
) -> None:
    report = run["report"]
    by_status: dict[str, int] = {}
    for requirement in report["requirements"]:
        by_status[requirement["status"]] = by_status.get(requirement["status"], 0) + 1
    total = len(report["requirements"])
    browser.get(run["page"].as_uri())
    assert browser.title.startswith("convledger conformance")
    assert _visible(browser) == total
    failed = [r["id"] for r in report["requirements"] if r["status"] == "failed"]
    assert failed and all(browser.by_id(f"req-{i}").is_displayed() for i in failed)
    assert browser.by_id("meta-profile").text == "smoke"

    for status, count in by_status.items():  # each status button: click, then count rows
        browser.find(f'button[data-status="{status}"]').click()
        assert _visible(browser) == count, status
        assert browser.by_id("shown").text == f"{count} of {total} shown"
    browser.find('button[data-status="failed"]').click()
    assert all(browser.by_id(f"req-{i}").is_displayed() for i in failed)
    assert not browser.find("tr.req.st-passed").is_displayed()
    browser.find('button[data-status="all"]').click()
    assert _visible(browser) == total

    chapter = "ledger.md"  # the chapter menu
    browser.by_id("chapter-filter").select(chapter)
    assert _visible(browser) == sum(r["chapter"] == chapter for r in report["requirements"])
    assert not browser.find('section[data-chapter="errors.md"]').is_displayed()
    browser.by_id("chapter-filter").select("all")
    assert _visible(browser) == total

    search = browser.by_id("search")  # the text search: id, sentence, checks
    term = BROKEN.catches[0]
    sentences = _sentences()
    matching = [
        r["id"] for r in report["requirements"]
        if term.lower()
        in " ".join([r["id"], r["status"], sentences[r["id"]], *r["checks"]]).lower()
    ]
    search.send_keys(term)
    assert 1 <= _visible(browser) == len(matching) < total
    assert browser.by_id(f"req-{term}").is_displayed()
    search.clear()  # clear() fires no input event: say it, as a keystroke would
    browser.script("document.getElementById('search').dispatchEvent(new Event('input'))")
    assert _visible(browser) == total

    shot = tmp_path / "report.png"
    png = browser.screenshot()
    shot.write_bytes(png)
    assert shot.stat().st_size > 1000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    hostile = tmp_path / "hostile.html"  # a message holding <script> shows as text, never runs
    hostile.write_text(render_html(_hostile(report)), "utf-8")
    browser.get(hostile.as_uri())
    assert browser.script("return window.__pwned === undefined") is True
    hostile_check = next(c["name"] for c in report["checks"] if c["status"] == "failed")
    assert HOSTILE in browser.find(f"#check-{hostile_check} .message").text


def test_the_first_screen_says_failed_and_where_to_start(
    run: dict[str, Any], browser: Browser
) -> None:
    """Issue 35: the banner and the first failure (root cause first) open the page."""
    report = run["report"]
    browser.get(run["page"].as_uri())
    height = browser.script("return window.innerHeight")
    banner = browser.by_id("banner")
    failed_checks = [c for c in report["checks"] if c["status"] == "failed"]
    failed_ids = [r for r in report["requirements"] if r["status"] == "failed"]
    assert banner.is_displayed() and banner.text.startswith(
        f"FAILED: {len(failed_checks)} checks failed, on {len(failed_ids)} requirement ids")
    assert report["startHere"] in banner.text
    first = report["failureOrder"][0]
    assert report["startHere"].startswith(f"Start here: {first} ")
    for ident in ("banner", f"check-{first}"):  # both within the first screen
        top = browser.script(
            f"return document.getElementById({ident!r}).getBoundingClientRect().top")
        assert 0 <= top < height, (ident, top, height)
    assert browser.find(".failure h3").text.startswith(f"start here: {first}")
    button = browser.find('button[data-status="failed"]').text  # the counts agree
    assert button == f"failed ({len(failed_ids)})"


def _sentences() -> dict[str, str]:
    """Each id's spec sentence, from the shipped requirements.json."""
    index = json.loads(
        (TESTS.parent / "conformance/convledger_conformance/requirements.json").read_text("utf-8")
    )
    return {r["id"]: r["summary"] for r in index["requirements"]}


def _visible(browser: Browser) -> int:
    count: int = browser.script(
        "return Array.prototype.filter.call(document.querySelectorAll('tr.req'),"
        " function (row) { return row.getClientRects().length > 0; }).length"
    )
    return count


def _hostile(report: dict[str, Any]) -> dict[str, Any]:
    """The report with hostile text in its store name and in its first failed check."""
    changed = copy.deepcopy(report)
    changed["store"] = HOSTILE
    failed = [c for c in changed.get("checks", []) if c.get("status") == "failed"]
    if not failed:
        failed = [{"name": "x", "status": "failed", "failedIds": ["LED-003"], "detail": ""}]
        changed["checks"] = failed
    failed[0]["message"] = HOSTILE
    return changed


def _escaped(text: str) -> str:
    import html

    return html.escape(text, quote=True)
