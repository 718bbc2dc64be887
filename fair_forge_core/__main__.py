"""`python -m fair_forge_core …`: the command line, see `fair_forge_core.cli`."""

from fair_forge_core.cli import console_main

raise SystemExit(console_main())
