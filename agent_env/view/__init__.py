"""`agent-env view`: a page over a folder of trajectories, served from this machine with the standard
library alone; the page (HTML, JS, CSS) ships in the package and fetches nothing from elsewhere."""

from agent_env.view._api import FilterError, Filters
from agent_env.view._folder import Listing, Recorded, SkippedLine, TrajectoryFolder, ViewError
from agent_env.view._server import ViewServer

__all__ = [
    "FilterError",
    "Filters",
    "Listing",
    "Recorded",
    "SkippedLine",
    "TrajectoryFolder",
    "ViewError",
    "ViewServer",
]
