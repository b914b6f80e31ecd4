"""``python -m pitrio`` runs the ``pitrio`` command."""

import sys

from pitrio.cli import main

sys.exit(main())
