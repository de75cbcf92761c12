"""``python -m convledger_conformance`` is the ``convledger-conformance`` command."""

from convledger_conformance.cli import main

raise SystemExit(main())
