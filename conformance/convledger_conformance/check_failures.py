"""A failed check's result: the ids it fails, its message and its detail.

A check fails the ids its :class:`~convledger_conformance.registry.CheckFailure`
names (a group of them fails the union; naming an id the check does not cover
fails them all), or every id on any other error. The detail keeps the
traceback, the user's own frames first, and whatever Hypothesis reported;
control characters are escaped so a report stays valid JSON and XML.
"""

from __future__ import annotations

import re
import time
import traceback
from collections.abc import Iterable
from pathlib import Path
from typing import Final

import attrs
import hypothesis

import convledger
from convledger.store import Capability
from convledger_conformance.registry import CheckFailure, HelperBroken
from convledger_conformance.results import FAILED, CheckResult

_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def failed_ids(ids: tuple[str, ...], error: BaseException) -> tuple[str, ...]:
    """The ids of a check that ``error`` proves broken (all of them unless it says which).

    A broken helper call beside real failures (a group) is left out: those say which ids.
    """
    leaves = [leaf for leaf in leaves_of(error) if not isinstance(leaf, HelperBroken)] or [error]
    if not all(isinstance(leaf, CheckFailure) for leaf in leaves):
        return ids
    named = {
        requirement
        for leaf in leaves
        if isinstance(leaf, CheckFailure)
        for requirement in leaf.ids
    }
    if not named or not named <= set(ids):
        return ids
    return tuple(requirement for requirement in ids if requirement in named)



def failed_result(
    name: str,
    ids: tuple[str, ...],
    error: BaseException,
    started: float,
    *,
    reported: Iterable[str] = (),
    capability: Capability = Capability.LEDGER,
) -> CheckResult:
    broken = failed_ids(ids, error)
    detail = "".join(traceback.format_exception(error))
    yours = user_frames(error)
    if yours:  # the user's frames first: where their store raised (issue 35)
        detail = ("In your code (innermost last):\n" + "".join(yours)
                  + "\nThe whole traceback:\n" + detail)
    output = "\n".join(reported)
    if output:
        detail = f"{detail}\nHypothesis reported:\n{output}\n"
    return CheckResult(
        name=name,
        ids=ids,
        capability=capability,
        status=FAILED,
        duration=time.perf_counter() - started,
        failed_ids=broken,
        message=printable(one_line(error)),
        detail=printable(detail),
    )


NOT_USER_CODE: Final = (
    *(str(Path(module.__file__).resolve().parent)
      for module in (convledger, hypothesis, attrs, traceback) if module.__file__ is not None),
    str(Path(__file__).resolve().parent),
)
"""Folders whose frames are not the user's: the reference, this suite, Hypothesis, attrs and
the standard library."""


def user_frames(error: BaseException) -> list[str]:
    """The formatted frames of ``error``'s traceback (and its causes) in the user's code."""
    frames: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        for frame in traceback.extract_tb(current.__traceback__):
            where = str(Path(frame.filename).resolve()) if frame.filename else ""
            if where and not where.startswith(NOT_USER_CODE) and "site-packages" not in where \
                    and not frame.filename.startswith("<"):
                frames.append("".join(traceback.format_list([frame])))
        current = current.__cause__ or current.__context__
    return frames



def leaves_of(error: BaseException) -> list[BaseException]:
    # Only a plain group (distinct bugs) is looked into; Hypothesis' Flaky
    # groups are failures of their own and fail every id.
    if isinstance(error, BaseExceptionGroup) and type(error) in (
        ExceptionGroup,
        BaseExceptionGroup,
    ):
        return [leaf for inner in error.exceptions for leaf in leaves_of(inner)]
    return [error]


def one_line(error: BaseException) -> str:
    if isinstance(error, CheckFailure):
        return (error.message.strip().splitlines() or [""])[0]
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def printable(text: str) -> str:
    """Escape control characters and lone surrogates (a store's data may hold any).

    The report then stays valid UTF-8 JSON and XML and cannot drive a terminal.
    """
    return _UNPRINTABLE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
