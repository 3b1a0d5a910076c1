"""The Modelica gym: models from a spec, compiled and simulated (rumoca or OpenModelica) in the sandbox.

Register it as `modelica = "gyms.modelica:ModelicaGym"` in the `heavygym.gyms` entry points.
"""

from gyms.modelica.gym import ModelicaGym

__all__ = ["ModelicaGym"]
