"""How a run starts a server process on a location and opens the store kept there (WIR-040).

A :class:`Target` starts a server process on one location (a ``{dir}`` of
``--command`` substituted with a directory the run creates, WIR-040), opens the
store kept there with ``openStore`` and, once the location's last server
ended, runs its ``--cleanup`` command. A server that does not serve
``openStore`` raises :class:`NotServed`: chapter DUR does not apply.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import attrs

from convledger.errors import LedgerError
from convledger.interface import EveryOperation
from convledger_conformance.wire.connection import WireConnection
from convledger_conformance.wire.store import WireStore


class NotServed(Exception):
    """The server refused ``openStore`` with ``not_supported``: chapter DUR does not apply."""


@attrs.frozen
class Target:
    """How to start one server process on a location and open the store kept there."""

    argv: tuple[str, ...]
    """The command; every ``{dir}`` becomes the location's directory."""
    location: str | None = None
    """What ``openStore`` asks for; None: the directory itself."""
    env: dict[str, str] | None = None
    timeout: float = 60.0
    cleanup: tuple[str, ...] = ()
    """A command run once per location after its last server ended (every ``{dir}``
    substituted), before the directory is removed: it drops what the store keeps
    outside the directory (a server database's schema). Empty: none."""

    @classmethod
    def command(cls, command: str, timeout: float = 60.0, cleanup: str = "") -> Target:
        return cls(tuple(shlex.split(command)), timeout=timeout,
                   cleanup=tuple(shlex.split(cleanup)))

    def clean_up(self, directory: Path) -> str:
        """Run the cleanup command on ``directory``: "" when it succeeded or there is none."""
        if not self.cleanup:
            return ""
        argv = [part.replace("{dir}", str(directory)) for part in self.cleanup]
        try:
            done = subprocess.run(argv, env=self.env, capture_output=True, text=True,
                                  timeout=max(self.timeout, 60.0), check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"cleanup {shlex.join(argv)}: {error}"
        if done.returncode != 0:
            return (f"cleanup {shlex.join(argv)} exited {done.returncode}: "
                    f"{done.stderr.strip()[-500:]}")
        return ""

    @classmethod
    def opener(cls, opener: str, location: str) -> Target:
        """The reference server on an in-process store's locator (``--opener``)."""
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        argv = (sys.executable, "-m", "convledger", "serve-wire", "--opener", opener)
        return cls(argv, location, env)

    def start(self, directory: Path) -> tuple[WireConnection, EveryOperation]:
        argv = [part.replace("{dir}", str(directory)) for part in self.argv]
        connection = WireConnection(argv, timeout=self.timeout, env=self.env)
        if "openStore" not in (connection.hello.get("operations") or ()):
            connection.close()
            raise NotServed("the server's hello does not list openStore (WIR-040)")
        try:
            created = connection.request("openStore", {"location": self.location or str(directory)})
        except LedgerError as refusal:
            connection.close()
            if refusal.kind == "not_supported":
                raise NotServed(f"openStore refused with {refusal.kind}") from None
            raise
        return connection, WireStore(connection, created)
