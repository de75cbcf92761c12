"""The interface of capability multi_process (LED-016): locators, open_located, SQLite's handles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convledger.errors import InvalidInputError, LedgerError, NotFoundError
from convledger.handles import MultiProcessStore, StoreLocator, open_located
from convledger.sqlite import SqliteStore, open_file_store


def test_a_locator_survives_json_and_opens_the_same_file(tmp_path: Path) -> None:
    """locator() names the file; open_located opens a handle that sees the same ledger."""
    store = SqliteStore(tmp_path / "a.sqlite")
    try:
        assert isinstance(store, MultiProcessStore)
        locator = StoreLocator.from_json(store.locator().to_json())
        assert locator == store.locator()
        other = open_located(locator)
        handle = store.open_handle()
        try:
            assert isinstance(other, SqliteStore) and other is not store
            assert other.capabilities == handle.capabilities == store.capabilities
            assert Path(other.path) == Path(store.path).resolve()
        finally:
            other.close()
            handle.close()
    finally:
        store.close()


@pytest.mark.parametrize(
    "text",
    ["not json", "[]", '{"opener": "x:y"}', '{"opener": "x:y", "argument": 1}',
     '{"opener": "no colon", "argument": ""}', '{"opener": "a:", "argument": ""}',
     '{"opener": "a:b", "argument": "", "more": 1}'],
)
def test_a_malformed_locator_is_invalid_input(text: str) -> None:
    """Anything but the JSON of a well-formed locator is refused with invalid_input."""
    with pytest.raises(InvalidInputError):
        open_located(StoreLocator.from_json(text))


@pytest.mark.parametrize(
    "opener",
    ["convledger.no_such_module:open", "convledger.sqlite:no_such_opener",
     "convledger.sqlite:LATEST_VERSION", "json:dumps"],
)
def test_an_opener_that_is_not_one_is_invalid_input(opener: str) -> None:
    """An unimportable, missing or uncallable opener, or one returning no store, is refused."""
    with pytest.raises(InvalidInputError):
        open_located(StoreLocator(opener=opener, argument="{}"))


def test_the_file_opener_refuses_bad_arguments(tmp_path: Path) -> None:
    """open_file_store refuses malformed arguments, foreign classes and missing files."""
    good = {"store": "convledger.sqlite:SqliteStore", "path": str(tmp_path / "x.sqlite"),
            "synchronous": "FULL", "busyTimeout": 5}
    for bad in ("{", json.dumps({**good, "path": "relative.sqlite"}),
                json.dumps({**good, "store": "json:JSONDecoder"}),
                json.dumps({**good, "busyTimeout": True}), json.dumps({"path": good["path"]})):
        with pytest.raises(InvalidInputError):
            open_file_store(bad)
    with pytest.raises(NotFoundError):
        open_file_store(json.dumps(good))
    assert not (tmp_path / "x.sqlite").exists()


def test_stores_without_multi_process_refuse_both(tmp_path: Path) -> None:
    """CAP-002 for LED-016: a :memory: store and a read-only handle refuse not_supported."""
    SqliteStore(tmp_path / "r.sqlite").close()
    for store in (SqliteStore(":memory:"), SqliteStore(tmp_path / "r.sqlite", read_only=True)):
        try:
            for call in (store.open_handle, store.locator):
                with pytest.raises(LedgerError) as caught:
                    call()
                assert caught.value.kind == "not_supported"
        finally:
            store.close()
