"""``python -m dawrap``: the dawrap command line (:mod:`dawrap.cli`)."""
import sys

from .cli import main

sys.exit(main())
