"""`python -m agent_env.cli`."""

from __future__ import annotations

import sys

from agent_env.cli import main

sys.exit(main())
