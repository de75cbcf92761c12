"""The store interface (chapters ``ledger.md``, ``archive.md``, ``capabilities.md``).

Theory of operation
-------------------
A store is the ledger plus, optionally, the capabilities of later chapters.
This module is the one place to import the store interface from; it defines
nothing itself and re-exports the three modules that hold it:

=========================  =================================================
module                     what lives there
=========================  =================================================
:mod:`~convledger.store_interface`
                           :class:`LedgerStore`, capability ``ledger``,
                           assuming no particular database;
                           :class:`PersistentStore` (``reopen``); the values
                           :class:`Page` and :class:`ImportReport`;
                           the limits ``DEFAULT_READ_LIMIT``,
                           ``MAX_READ_LIMIT`` (LED-007) and ``MAX_BATCH``
                           (LED-001)
:mod:`~convledger.store_base`
                           :class:`StoreBase`: everything that does not depend
                           on storage (argument checks, paging, archive
                           encoding and decoding) above five atomic
                           hooks each concrete store implements;
                           :func:`companions_of`, an archive's companions
                           member (TRN-103, PRJ-040, SPL-040)
:mod:`~convledger.batch`   :func:`validated_batch`: every check of an append
                           that needs no stored state (LED-001, LED-003,
                           LED-005, LED-006), shared by every append path
                           (as :data:`checked_batch`, bound at the codec seam)
=========================  =================================================

Each capability's protocol lives with its chapter's code and
:mod:`convledger.interface` lists them; :func:`~convledger.interface.require`
checks a declaration and narrows a store to one of them. Every operation a
store does not implement answers ``not_supported`` (CAP-002).
:class:`Capability` and :func:`not_supported` are re-exported from
:mod:`convledger.capabilities`.
"""

from __future__ import annotations

from convledger.batch import checked_batch as checked_batch
from convledger.batch import validated_batch as validated_batch
from convledger.capabilities import Capability as Capability
from convledger.capabilities import not_supported as not_supported
from convledger.store_base import StoreBase as StoreBase
from convledger.store_base import companions_of as companions_of
from convledger.store_interface import DEFAULT_READ_LIMIT as DEFAULT_READ_LIMIT
from convledger.store_interface import MAX_BATCH as MAX_BATCH
from convledger.store_interface import MAX_READ_LIMIT as MAX_READ_LIMIT
from convledger.store_interface import ImportReport as ImportReport
from convledger.store_interface import LedgerStore as LedgerStore
from convledger.store_interface import Page as Page
from convledger.store_interface import PersistentStore as PersistentStore
