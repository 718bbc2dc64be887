"""`python -m fair_forge_core …`: the command line, see `fair_forge_core.cli`."""

from fair_forge_core.cli import main

raise SystemExit(main())
