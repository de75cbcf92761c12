"""Checks of the spec gaps an outsider found (issue 33): each fails the choice the spec refused.

One check per pinned gap outside chapter WIR (those are in
:mod:`convledger_conformance.wire.checks_gaps`): the ``formatVersion`` values
(ARC-018), companions of undeclared capabilities (ERR-012), what counts toward
``maxEvents`` (PRJ-053, which also kills a catch-up that stops counting once
it skips), which state is judged (PRJ-054), repeated handed definitions
(PRJ-055), the media-type grammar (SPL-056), a missing ``authorize``
(SPL-057), spill writes on a purged conversation (TRN-110), ECMA-262 patterns
(KND-005, KND-006) and characters as code points (LIM-013).
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any, Final

import attrs

from convledger import canonical
from convledger.canonical import JsonValue
from convledger.errors import LedgerError
from convledger.interface import require
from convledger.projections.named import NamedFold
from convledger.store import Capability, LedgerStore
from convledger_conformance.ledger.model import read_whole
from convledger_conformance.projections.model import counting
from convledger_conformance.registry import CheckContext, check
from convledger_conformance.support import (
    STAMP,
    accepted,
    archive,
    draft,
    fail,
    refused,
    run_once,
    untyped,
    wires,
)

_SHA = "0123456789abcdef" * 4


def _rewritten(data: bytes, **members: Any) -> bytes:
    """The archive ``data`` with top-level members replaced (``None`` deletes), canonical."""
    document = json.loads(data)
    for name, value in members.items():
        if value is _ABSENT:
            document.pop(name, None)
        else:
            document[name] = value
    return canonical.encode(document)


_ABSENT = object()


@check("ARC-018", "ARC-002", "ERR-011")
def check_archive_format_versions(ctx: CheckContext) -> None:
    """ARC-018: only an integer other than 1 is another formatVersion, judged before format."""

    def body(store: LedgerStore) -> None:
        good = archive("fv", wires("fv", [draft("fv-1", 1)]))
        unsupported = {
            "formatVersion 2": _rewritten(good, formatVersion=2),
            "formatVersion 0": _rewritten(good, formatVersion=0),
            "formatVersion 2**40": good.replace(
                b'"formatVersion":1', b'"formatVersion":1099511627776'),
            "formatVersion 2 with another format": _rewritten(
                good, formatVersion=2, format="other"),
            "formatVersion 2 without format": _rewritten(good, formatVersion=2, format=_ABSENT),
        }
        for what, data in unsupported.items():
            refused(partial(store.import_conversation, data), "not_supported",
                    ("ARC-018", "ERR-011"), what, store=store, touched=["fv"])
        broken = {
            "formatVersion null": _rewritten(good, formatVersion=None),
            "formatVersion text": _rewritten(good, formatVersion="2"),
            "formatVersion true": _rewritten(good, formatVersion=True),
            "formatVersion 1.5": good.replace(b'"formatVersion":1', b'"formatVersion":1.5'),
            "formatVersion 2.0": good.replace(b'"formatVersion":1', b'"formatVersion":2.0'),
            "formatVersion []": _rewritten(good, formatVersion=[]),
            # beyond 2**53 - 1 the text is no canonical JSON: refused at step 1 (CAN-013)
            "formatVersion 2**53": good.replace(
                b'"formatVersion":1', b'"formatVersion":9007199254740992'),
            "formatVersion 10**16": good.replace(
                b'"formatVersion":1', b'"formatVersion":10000000000000000'),
        }
        for what, data in broken.items():
            refused(partial(store.import_conversation, data), "invalid_input",
                    ("ARC-018", "ARC-002"), what, store=store, touched=["fv"])
        accepted(partial(store.import_conversation, good), "ARC-018", "the archive itself")

    run_once(ctx, body)


@check("ERR-012", "ERR-011", "TRN-109")
def check_import_of_undeclared_companions(ctx: CheckContext) -> None:
    """ERR-012: a companion of an undeclared capability is not_supported whatever it holds."""

    def body(store: LedgerStore) -> None:
        good = archive("uc", wires("uc", [draft("uc-1", 1)]))
        for name, capability in (("runtime", Capability.TRANSITIONS),
                                 ("projections", Capability.PROJECTIONS)):
            for shape in (5, {"not": "a companion"}):
                data = _rewritten(good, companions={name: shape})
                kind = "invalid_input" if capability in ctx.capabilities else "not_supported"
                refused(partial(store.import_conversation, data), kind, ("ERR-012", "ERR-011"),
                        f"a {name} companion {shape!r} on a store "
                        f"{'declaring' if kind == 'invalid_input' else 'without'} "
                        f"{capability.value}", store=store, touched=["uc"])
        bad_event = _rewritten(good, companions={"runtime": 5},
                               events=[{**json.loads(good)["events"][0], "seq": 2}])
        refused(partial(store.import_conversation, bad_event), "invalid_input",
                ("ERR-012", "ERR-011"), "a broken event before an undeclared companion",
                store=store, touched=["uc"])

    run_once(ctx, body)


PRJ: Final = Capability.PROJECTIONS


@check("PRJ-053", "PRJ-011", "PRJ-032", capability=PRJ)
def check_skipped_events_count_toward_max_events(ctx: CheckContext) -> None:
    """PRJ-053: every event a catch-up passes counts toward maxEvents, skipped ones too."""

    def body(store: LedgerStore) -> None:
        s = require(store, PRJ)
        events = [
            {**wire, "kind": "x/unknown", "ignorable": True} if seq <= 6 else wire
            for seq, wire in enumerate(
                wires("sk", [draft(f"sk-{n}", n) for n in range(1, 11)]), start=1)
        ]
        store.import_conversation(archive("sk", events))
        definition = counting()
        steps = []
        for bound in (4, 4, 4):
            point = accepted(partial(s.catch_up, "sk", definition, max_events=bound),
                             "PRJ-053", f"catch_up(max_events={bound})")
            steps.append(point.upto_seq)
        if steps != [4, 8, 10]:
            fail(("PRJ-053", "PRJ-011"), f"catch_up(max_events=4) three times over 6 skipped "
                 f"ignorable events then 4 folded ones reached uptoSeq {steps}, not [4, 8, 10]")
        mixed = [
            {**wire, "kind": "x/unknown", "ignorable": True} if seq % 2 else wire
            for seq, wire in enumerate(
                wires("mx", [draft(f"mx-{n}", n) for n in range(1, 9)]), start=1)
        ]
        store.import_conversation(archive("mx", mixed))
        point = s.catch_up("mx", definition, max_events=3)
        if point.upto_seq != 3 or point.state != {"count": 1, "seqs": [2]}:
            fail("PRJ-053", f"catch_up(max_events=3) over alternating skipped and folded events "
                 f"gave uptoSeq {point.upto_seq} and {point.state!r}, not 3 and one fold")

    run_once(ctx, body)


@check("PRJ-054", "PRJ-033", capability=PRJ)
def check_catch_up_judges_the_stored_state(ctx: CheckContext) -> None:
    """PRJ-054: only the state a catch-up would store is judged, not the ones it replaced."""

    def body(store: LedgerStore) -> None:
        s = require(store, PRJ)
        store.append("dt", [draft(f"dt-{n}", n) for n in range(1, 4)])
        definition = attrs.evolve(counting(name="detour"),
                                  fold=NamedFold("conformance.detour", 1))
        refused(partial(s.catch_up, "dt", definition, max_events=2), "invalid_input",
                ("PRJ-054", "PRJ-033"), "a catch-up that would store the invalid state of seq 2",
                store=store, touched=["dt"])
        point = accepted(partial(s.catch_up, "dt", definition, max_events=3), "PRJ-054",
                         "a catch-up passing an invalid state to store a valid one")
        if point.upto_seq != 3 or point.state != {"count": 3, "seqs": [3]}:
            fail("PRJ-054", f"the detour fold stored {point!r}")

    run_once(ctx, body)


@check("PRJ-055", "PRJ-043", capability=PRJ)
def check_handed_definitions_repeating_a_name(ctx: CheckContext) -> None:
    """PRJ-055: definitions handed to an import that repeat a name are refused, nothing imported."""

    def body(store: LedgerStore) -> None:
        data = archive("rn", wires("rn", [draft("rn-1", 1)]))
        first, second = counting(name="twice"), counting(name="twice", version=2)
        for given in ([first, second], [first, first]):
            refused(partial(store.import_conversation, data, projections=given),  # type: ignore[call-arg]
                    "invalid_input", ("PRJ-055", "PRJ-043"),
                    f"an import handed {[d.version for d in given]} of one name",
                    store=store, touched=["rn"])
        accepted(partial(store.import_conversation, data, projections=[first]),  # type: ignore[call-arg]
                 "PRJ-055", "an import handed one definition")

    run_once(ctx, body)


SPL: Final = Capability.SPILLS
_GRANT: dict[str, JsonValue] = {"operationId": "op", "authorization": {"user": "u"}}


def _put(store: LedgerStore, conversation: str, reference: str, media_type: str,
         event_id: str) -> object:
    return require(store, SPL).put_spill(
        conversation, b"x", media_type=media_type, operation=_GRANT, reference=reference,
        event_id=event_id, occurred_at=STAMP)


@check("SPL-056", "SPL-004", capability=SPL)
def check_media_type_grammar(ctx: CheckContext) -> None:
    """SPL-056: one spelling per media type: lower case, at most one space after ';', no other."""
    good = ("text/plain", "text/plain;charset=utf-8", "text/plain; charset=utf-8",
            'text/plain; name="a b;c"', "application/vnd.a+json; v=1; q=2", 'a/b; n=""')
    bad = ("Text/Plain", "text/PLAIN", "text/plain; Charset=utf-8", " text/plain",
           "text/plain ", "text/plain ;a=b", "text/plain;  a=b", "text/plain; a =b",
           "text/plain; a= b", 'text/plain; a="x\\"y"', "text/plain;", "text/plain; a",
           "text/plain\t; a=b", "text/ plain", "-text/plain")

    def body(store: LedgerStore) -> None:
        for n, media_type in enumerate(good):
            accepted(partial(_put, store, "mt", f"g{n}", media_type, f"mt-g{n}"), "SPL-056",
                     f"media type {media_type!r}")
        for n, media_type in enumerate(bad):
            refused(partial(_put, store, "mt", f"b{n}", media_type, f"mt-b{n}"), "invalid_input",
                    ("SPL-056", "SPL-004"), f"media type {media_type!r}", store=store,
                    touched=["mt"])

    run_once(ctx, body)


@check("SPL-057", "SPL-020", capability=SPL)
def check_get_spill_without_a_callback(ctx: CheckContext) -> None:
    """SPL-057: a get_spill without a callable authorize is invalid_input, before not_found."""

    def body(store: LedgerStore) -> None:
        s = untyped(require(store, SPL))
        _put(store, "na", "r", "text/plain", "na-1")
        for value in (None, True, "yes", 1):
            for reference in ("r", "absent"):
                refused(partial(s.get_spill, "na", reference, authorize=value), "invalid_input",
                        ("SPL-057", "SPL-020"),
                        f"get_spill of {reference!r} with authorize={value!r}")
        if s.get_spill("na", "r", authorize=lambda _: True) != b"x":
            fail("SPL-057", "a granted get_spill did not return the bytes")

    run_once(ctx, body)


@check("TRN-110", "TRN-092", capability=SPL, also=(Capability.PURGE,))
def check_spill_writes_on_a_purged_conversation(ctx: CheckContext) -> None:
    """TRN-110: put_spill, delete_spill and import_bundle of a purged conversation are purged."""

    def body(store: LedgerStore) -> None:
        s = require(store, SPL)
        _put(store, "pg", "r", "text/plain", "pg-1")
        bundle = s.export_bundle("pg")
        require(store, Capability.PURGE).purge("pg")
        ids = ("TRN-110", "TRN-092")
        refused(partial(_put, store, "pg", "r2", "text/plain", "pg-2"), "purged", ids,
                "put_spill after a purge", store=store, touched=["pg"])
        refused(partial(s.delete_spill, "pg", "r", event_id="pg-3", occurred_at=STAMP), "purged",
                ids, "delete_spill of the reference the purge removed", store=store,
                touched=["pg"])
        refused(partial(s.import_bundle, bundle), "purged", ids, "import_bundle after a purge",
                store=store, touched=["pg"])
        refused(partial(_put, store, "pg", "r3", "Not/A Type", "pg-4"), "invalid_input", ids,
                "put_spill with an invalid media type after a purge (invalid_input first)")

    run_once(ctx, body)


_INSTANT: Final = "2024-01-01T00:00:00Z"
_NOT_PORTABLE: Final = (
    _INSTANT + "\n",  # Python's $ matches before a final newline
    _INSTANT.replace("2024", "\u0662\u0660\u0662\u0664"),  # Arabic-Indic digits: Python's \\d
    _INSTANT.replace("2024", "\uff12\uff10\uff12\uff14"),  # fullwidth digits
    _INSTANT.replace("2024", "\U0001d7d0\U0001d7ce\U0001d7d0\U0001d7d2"),  # astral digits
)


@check("KND-005", "KND-006", "KND-003")
def check_schema_patterns_are_ecma_262(ctx: CheckContext) -> None:
    """KND-005, KND-006: the end of a pattern is the end of the string and a digit is
    [0-9]: a sha256 followed by a newline, and an instant with a final newline or with
    Unicode (also astral) digits, are refused."""

    def body(store: LedgerStore) -> None:
        def created(event_id: str, sha: str) -> Any:
            return draft(event_id, kind="spill/created", payload={
                "reference": "r", "bytes": 1, "sha256": sha, "mediaType": "text/plain"})

        def scheduled(event_id: str, at: str) -> Any:
            return draft(event_id, kind="schedule/set", payload={
                "id": "s", "kind": "at", "nextAt": at})

        for n, at in enumerate(_NOT_PORTABLE):
            refused(partial(store.append, "kp", [scheduled(f"kp-n{n}", at)]), "invalid_input",
                    ("KND-006", "KND-003"), f"a schedule/set nextAt {at!r}",
                    store=store, touched=["kp"])
        for n, sha in enumerate((_SHA + "\n", _SHA + "\r\n", " " + _SHA,
                                 "\u0661" * 64)):
            refused(partial(store.append, "kp", [created(f"kp-b{n}", sha)]), "invalid_input",
                    ("KND-005", "KND-003"), f"a spill/created sha256 {sha!r}",
                    store=store, touched=["kp"])
        accepted(partial(store.append, "kp", [created("kp-g", _SHA)]), "KND-005",
                 "a spill/created payload with a 64-hex sha256")
        accepted(partial(store.append, "kp", [scheduled("kp-s", _INSTANT)]), "KND-006",
                 "a schedule/set payload with an ASCII instant")
        if len(read_whole(store, "kp")) != 2:
            fail("KND-005", "a refused payload was stored")

    run_once(ctx, body)


@check("KND-007", "KND-003")
def check_schema_bounds_hold_beyond_2_53(ctx: CheckContext) -> None:
    """KND-007: a payload integer at or beyond 2**53 breaks a bound of 2**53-1, whether the
    store holds it exactly or as a double; 2**53-1 itself passes."""

    def body(store: LedgerStore) -> None:
        def started(event_id: str, attempt: int) -> Any:
            return draft(event_id, kind="retry/started", payload={"attempt": attempt})

        for n, attempt in enumerate((2**53, 10**16, -(2**53), 0)):
            refused(partial(store.append, "kb", [started(f"kb-b{n}", attempt)]),
                    "invalid_input", ("KND-007", "KND-003"),
                    f"a retry/started attempt {attempt}", store=store, touched=["kb"])
        accepted(partial(store.append, "kb", [started("kb-g", 2**53 - 1)]), "KND-007",
                 "a retry/started attempt 2**53-1")

    run_once(ctx, body)


_ASTRAL = "\U0001f600"


@check("LIM-013", "PRJ-001", capability=PRJ)
def check_characters_are_code_points(ctx: CheckContext) -> None:
    """LIM-013: 200 astral characters are a legal projection name (400 UTF-16 units); 201 not."""

    def body(store: LedgerStore) -> None:
        s = require(store, PRJ)
        store.append("cp", [draft("cp-1", 1)])
        at = accepted(partial(s.catch_up, "cp", counting(name=_ASTRAL * 200)), "LIM-013",
                      "a projection name of 200 characters outside the BMP")
        if at.upto_seq != 1:
            fail("LIM-013", f"the catch-up answered {at!r}")
        refused(lambda: s.catch_up("cp", counting(name=_ASTRAL * 201)), "invalid_input",
                ("LIM-013", "PRJ-001"), "a projection name of 201 characters outside the BMP")

    run_once(ctx, body)


__all__ = ["LedgerError"]
