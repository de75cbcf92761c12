"""A small W3C WebDriver client (standard library only) for Debian's chromium-driver.

Not a test: ``tests/test_html_report.py`` uses it to drive a real headless
Chromium. It speaks the W3C WebDriver protocol (JSON over HTTP) to the
``chromedriver`` that Debian's ``chromium-driver`` package installs, started
here on a free local port. The ``selenium`` package would do the same, but it
brings ``trio``, whose Hypothesis plugin imports pytest whenever Hypothesis
is imported, and so into every import of the suite
(``tests/test_public_api.py`` forbids that).

Only what the test needs: open a page, find elements by CSS selector, click,
type, clear, read text and visibility, run a script, take a screenshot.
"""

from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from typing import Any

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"
"""The W3C key of an element reference in a reply."""
START_SECONDS = 60.0
"""How long chromedriver may take to answer its first status request (not a measurement)."""


def browser_paths() -> tuple[str | None, str | None]:
    """The chromium binary and the chromedriver on PATH (None when absent)."""
    return (shutil.which("chromium") or shutil.which("chromium-browser"),
            shutil.which("chromedriver"))


class WebDriverError(RuntimeError):
    """chromedriver answered a command with an error."""


class Element:
    """One element of the current page."""

    def __init__(self, driver: Browser, reference: str) -> None:
        self._driver = driver
        self._path = f"/element/{reference}"

    def click(self) -> None:
        self._driver.command("POST", f"{self._path}/click", {})

    def send_keys(self, text: str) -> None:
        self._driver.command("POST", f"{self._path}/value", {"text": text})

    def clear(self) -> None:
        self._driver.command("POST", f"{self._path}/clear", {})

    @property
    def text(self) -> str:
        return str(self._driver.command("GET", f"{self._path}/text"))

    def is_displayed(self) -> bool:
        # The W3C "element displayed" algorithm is chromedriver's own endpoint.
        return bool(self._driver.command("GET", f"{self._path}/displayed"))

    def select(self, value: str) -> None:
        """Choose the option of a ``<select>`` by its value, as a click on it would."""
        self._driver.command("POST", f"{self._path}/click", {})
        option = self._driver.find(f'option[value="{value}"]')
        option.click()


class Browser:
    """A headless Chromium session through chromedriver; close it with :meth:`quit`."""

    def __init__(self, chromium: str, chromedriver: str, *, width: int = 1280,
                 height: int = 1600) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self._process = subprocess.Popen(
            [chromedriver, f"--port={port}"], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._base = f"http://127.0.0.1:{port}"
        self._session = ""
        try:
            self._wait_ready()
            arguments = ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                         "--disable-gpu", f"--window-size={width},{height}"]
            reply = self._call("POST", "/session", {"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {"binary": chromium, "args": arguments},
            }}})
            self._session = str(reply["sessionId"])
        except BaseException:
            self._process.kill()
            self._process.wait()
            raise

    def get(self, url: str) -> None:
        self.command("POST", "/url", {"url": url})

    @property
    def title(self) -> str:
        return str(self.command("GET", "/title"))

    def find(self, selector: str) -> Element:
        found = self.command("POST", "/element", {"using": "css selector", "value": selector})
        return Element(self, str(found[ELEMENT]))

    def by_id(self, ident: str) -> Element:
        return self.find(f'[id="{ident}"]')

    def script(self, source: str) -> Any:
        return self.command("POST", "/execute/sync", {"script": source, "args": []})

    def screenshot(self) -> bytes:
        return base64.b64decode(str(self.command("GET", "/screenshot")))

    def quit(self) -> None:
        try:
            if self._session:
                self._call("DELETE", f"/session/{self._session}", None)
        finally:
            self._process.kill()
            self._process.wait()

    def command(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        return self._call(method, f"/session/{self._session}{path}", body)["value"]

    def _call(self, method: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self._base + path, data=data, method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                reply: dict[str, Any] = json.loads(response.read())
        except urllib.error.HTTPError as error:
            raise WebDriverError(f"{method} {path}: {error.read().decode()[:500]}") from error
        if method == "POST" and path == "/session":
            value: dict[str, Any] = reply.get("value", reply)
            return value
        return reply

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                with urllib.request.urlopen(self._base + "/status", timeout=5) as response:
                    if json.loads(response.read())["value"]["ready"]:
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise WebDriverError("chromedriver did not start")
            time.sleep(0.05)
