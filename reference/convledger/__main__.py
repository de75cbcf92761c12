"""``python -m convledger`` is the ``convledger`` command."""

from convledger.cli import main

raise SystemExit(main())
