"""python3 -m wirecheck.sweep (and `wirecheck sweep`): cli.main."""
import sys

from .cli import main

sys.exit(main())
