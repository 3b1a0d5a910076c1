"""heavygym's gyms: the interface every gym implements, the sandbox, the pool and the registry.

Write a gym against `Gym` and `Episode`; load one by name with `make`.
"""

from gyms.base import (
    Candidate,
    Episode,
    EpisodeFinishedError,
    Gym,
    InfrastructureError,
    Outcome,
    StepResult,
    Task,
    ToolCheck,
    Verdict,
)
from gyms.registry import GymLoadError, UnknownGymError, UnknownGymOptionError, make, registered

__all__ = [
    "Candidate",
    "Episode",
    "EpisodeFinishedError",
    "Gym",
    "GymLoadError",
    "InfrastructureError",
    "Outcome",
    "StepResult",
    "Task",
    "ToolCheck",
    "UnknownGymError",
    "UnknownGymOptionError",
    "Verdict",
    "make",
    "registered",
]
