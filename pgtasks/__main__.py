"""``python -m pgtasks`` runs the command line."""

from pgtasks.cli.main import main

raise SystemExit(main())
