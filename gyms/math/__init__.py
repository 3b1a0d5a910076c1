"""The math gym: reasoning-gym or DAPO-Math problems, answers checked by math-verify."""

from gyms.math.gym import MathEpisode, MathGym

__all__ = ["MathEpisode", "MathGym"]
