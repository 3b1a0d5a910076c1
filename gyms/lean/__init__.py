"""The Lean gym: fixed theorem statements, proofs checked by Lean 4 (wasm build or a native Lean).

Register it as `lean = "gyms.lean:LeanGym"` in the `heavygym.gyms` entry points.
"""

from gyms.lean.gym import LeanGym

__all__ = ["LeanGym"]
