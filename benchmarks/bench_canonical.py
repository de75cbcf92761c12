"""Canonical JSON encoding, in envelopes per second (chapter ``canonical-json.md``; issue 8).

Contenders, all on the same realistic ~800-byte ``provider/message`` envelope:

* ``rfc8785``: the ``rfc8785`` package, the baseline the export budget names;
* ``clear``: :func:`convledger.canonical.encode`, the definition;
* ``fast``: :func:`convledger.fast.canonical.encode`, proven byte-identical to
  ``clear`` by ``tests/test_fast_canonical.py``;
* ``json_dumps``: ``json.dumps`` compact with sorted keys, which is NOT
  canonical in general: the floor of what the standard library can do.

Every benchmark first checks that its contender writes the canonical bytes, so
a figure can never come from a wrong encoder.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import rfc8785

from conftest import wire_envelope
from convledger import canonical
from convledger.canonical import JsonValue
from convledger.fast import canonical as fast
from raw_sqlite import interleave, median, spread

Encoder = Callable[[Any], bytes]


def json_dumps(value: Any) -> bytes:
    """The standard library's compact, sorted, unescaped JSON (canonical only for some values)."""
    return json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False
    ).encode("utf-8")


ENCODERS: dict[str, Encoder] = {
    "rfc8785": rfc8785.dumps,
    "clear": canonical.encode,
    "fast": fast.encode,
    "json_dumps": json_dumps,
}


def envelope_with_float() -> dict[str, JsonValue]:
    """The envelope with ``1.0`` in its payload: ``fast`` must hand it to the clear encoder."""
    envelope = wire_envelope(1)
    payload = envelope["payload"]
    assert isinstance(payload, dict)
    payload["score"] = 1.0
    return envelope


def archive(events: int) -> dict[str, JsonValue]:
    """An archive document (ARC-001) of ``events`` envelopes: the shape an export encodes."""
    return {
        "format": "convledger.archive",
        "formatVersion": 1,
        "conversationId": "conv-000000",
        "events": [wire_envelope(index, seq=index + 1) for index in range(events)],
        "companions": {},
    }


def _run(benchmark: Any, name: str, value: Any, *, events: int) -> None:
    encode = ENCODERS[name]
    assert encode(value) == canonical.encode(value), f"{name} is not canonical here"
    benchmark.extra_info.update(events=events, baseline=name == "rfc8785", bytes=len(encode(value)))
    benchmark(encode, value)


@pytest.mark.benchmark(group="canonical: one envelope (~800 B)")
@pytest.mark.parametrize("name", list(ENCODERS))
def test_encode_envelope(benchmark: Any, name: str) -> None:
    """Envelopes/s of each encoder on one realistic envelope."""
    _run(benchmark, name, wire_envelope(1), events=1)


@pytest.mark.benchmark(group="canonical: envelope holding 1.0 (fast writes it part by part)")
@pytest.mark.parametrize("name", ["rfc8785", "fast"])
def test_encode_envelope_with_float(benchmark: Any, name: str) -> None:
    """A value the C encoder would write wrongly (1.0): fast writes the payload part by part."""
    value = envelope_with_float()
    assert not fast.exact(value)
    _run(benchmark, name, value, events=1)


@pytest.mark.benchmark(group="canonical: archive of 1000 envelopes (export shape)")
@pytest.mark.parametrize("name", ["rfc8785", "fast", "clear"])
def test_encode_archive(benchmark: Any, name: str) -> None:
    """Events/s when a whole 1000-event archive document is encoded in one call."""
    _run(benchmark, name, archive(1000), events=1000)


def test_fast_vs_rfc8785_interleaved(record_figure: Any) -> None:
    """The speed-up of fast over rfc8785, measured interleaved: the figure the gate budgets."""
    value = wire_envelope(1)
    assert fast.encode(value) == rfc8785.dumps(value)
    calls = 50

    def batch(encode: Encoder) -> Callable[[], None]:
        def run() -> None:
            for _ in range(calls):
                encode(value)

        return run

    samples = interleave(
        {"fast": batch(fast.encode), "rfc8785": batch(rfc8785.dumps)}, rounds=200, warmup=5
    )
    ratio = median(samples["rfc8785"]) / median(samples["fast"])
    record_figure("fast vs rfc8785, interleaved, one envelope (speed-up)", ratio, "x")
    record_figure("  spread (IQR/median) fast", spread(samples["fast"]), "")
    record_figure("  spread (IQR/median) rfc8785", spread(samples["rfc8785"]), "")
    record_figure("  fast envelopes/s", calls / median(samples["fast"]), "/s")
