"""``python -m otel_traj.cli``: the ``otel-traj`` command without an installed entry point."""

import sys

from otel_traj.cli import main

sys.exit(main())
