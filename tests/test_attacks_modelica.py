"""Reward hacks against the Modelica gym (gyms/modelica/attacks.py), each through a real GymPool
worker: all must `fail`, and the controls hold after them."""

from __future__ import annotations

import pytest
from attacks import assert_suite_holds

from gyms.modelica import ModelicaGym
from gyms.modelica.attacks import TASK_ID
from gyms.modelica.catalog import load_catalog


@pytest.mark.slow
def test_reward_hacks_against_the_modelica_gym_fail():
    gym = ModelicaGym()
    (suite,) = gym.attack_suites()
    assert_suite_holds(gym, suite)


def test_the_attacks_task_is_the_one_they_target():
    # The attack answers are written against this set-up; a changed task would make them moot.
    setup = next(s for s in load_catalog() if s.id == TASK_ID).setup
    assert (setup.stop_time, setup.intervals, setup.variables) == (20.0, 400, ("x", "caught"))
