"""``python -m service.fairness`` (or ``python3 -m verify`` with a copy of this directory)."""

from .cli import main

raise SystemExit(main())
