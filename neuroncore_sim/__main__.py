"""``python -m neuroncore_sim ...``: the same as the ``neuroncore-sim`` command."""

import sys

from .cli import main

sys.exit(main())
