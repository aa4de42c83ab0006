"""``python -m geoattn`` is the ``geoattn`` command."""

import sys

from .cli import main

sys.exit(main())
