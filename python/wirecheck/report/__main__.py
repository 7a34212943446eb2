"""`python3 -m wirecheck.report` (wirecheck.report.cli)."""
import sys

from .cli import main

sys.exit(main())
