"""The checked members of a stored runtime record (``transitions.md``, TRN-101, TRN-105).

A record read back (from a ``runtime`` companion or a database row) is
checked member by member; a member missing, of the wrong type or out of
range is an ``integrity`` refusal naming the record and the member. Used by
the ``from_json`` of every record in :mod:`convledger.runtime.records`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, TypeVar

from convledger import limits
from convledger.errors import IntegrityError

_E = TypeVar("_E", bound=enum.Enum)


def broken(record: str, why: str) -> IntegrityError:
    return IntegrityError(f"malformed {record} record: {why}", requirement="TRN-011")


def members(value: object, record: str, names: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise broken(record, "not an object")
    if set(value) != set(names):
        missing = sorted(set(names) - set(value))
        extra = sorted(set(value) - set(names))
        raise broken(record, f"missing {missing}, unexpected {extra}")
    return value


def text(fields: Mapping[str, object], name: str) -> str:
    value = fields[name]
    if not isinstance(value, str) or not value:
        raise broken(name, "must be a non-empty string")
    return value


def string(fields: Mapping[str, object], name: str) -> str:
    value = fields[name]
    if not isinstance(value, str):
        raise broken(name, "must be a string")
    return value


def optional_text(fields: Mapping[str, object], name: str) -> str | None:
    return None if fields[name] is None else text(fields, name)


def texts(fields: Mapping[str, object], name: str) -> tuple[str, ...]:
    value = fields[name]
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise broken(name, "must be an array of non-empty strings")
    return tuple(value)


def count(fields: Mapping[str, object], name: str, *, minimum: int = 0) -> int:
    value = fields[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise broken(name, f"must be an integer >= {minimum}")
    return value


def flag(fields: Mapping[str, object], name: str) -> bool:
    value = fields[name]
    if not isinstance(value, bool):
        raise broken(name, "must be a boolean")
    return value


def enumerated(kind: type[_E], fields: Mapping[str, object], name: str) -> _E:
    value = fields[name]
    try:
        return kind(value)
    except ValueError:
        raise broken(name, f"unknown value {limits.shown(value)}") from None
