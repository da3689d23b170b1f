"""Harbor task folders (Terminal-Bench's format) served as bundles, read by this project's own loader.

`agent_env.load_bundle` takes a folder of them (or one) wherever it takes a bundle: see
docs/guides/harbor.md for what is supported.
"""

from agent_env.harbor._loader import PREFIX, SPLITS_FILE, HarborTasks, harbor_folder, read_harbor
from agent_env.harbor._verifier import RewardError

__all__ = [
    "PREFIX",
    "SPLITS_FILE",
    "HarborTasks",
    "RewardError",
    "harbor_folder",
    "read_harbor",
]
