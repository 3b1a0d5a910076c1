"""Reward hacks against the Lean gym (gyms/lean/attacks.py), through a real `GymPool(1)` and the
wasm checker: each must fail with the reason it names; afterwards, in the same worker, a correct
proof of another task passes and a wrong one fails (tests/attacks.py). One checker serves the
whole module. The same hacks must also fail at the checker alone (screen, then extraction, off).
"""

from __future__ import annotations

import pytest

from attacks import Attack, assert_suite_holds
from gyms.lean import LeanGym
from gyms.lean.attacks import attacks
from test_lean_wasm import wasm_lean  # noqa: F401  (the fixture that installs the wasm Lean)

pytestmark = pytest.mark.slow


def test_reward_hacks_fail_and_leave_nothing_behind(wasm_lean) -> None:  # noqa: F811
    gym = LeanGym()
    (suite,) = gym.attack_suites()
    assert_suite_holds(gym, suite)


def _refused_by_the_checker(gym: LeanGym, target, answers: list[Attack]) -> list[str]:
    problems = []
    for attack in answers:
        result = gym.open(target).step(attack.answer)
        if result.outcome.value != "fail" or result.info.get("stage") == "screen":
            problems.append(f"{attack.label}: {result.outcome.value} {result.observation[:200]!r}")
    return problems


def test_the_checker_alone_refuses_every_hack(wasm_lean, monkeypatch) -> None:  # noqa: F811
    """The same hacks with the text screen switched off: the guarantee rests on the checker's
    own parse (and on extraction and the size cap), not on the screen."""
    import gyms.lean.episode as episode

    monkeypatch.setattr(episode, "screen", lambda proof: [])
    gym = LeanGym()
    target = gym.tasks()[0]
    hacks = attacks(target.metadata["statement"], target.metadata["name"])
    problems = _refused_by_the_checker(gym, target, hacks)
    assert not problems, "\n".join(problems)


def test_the_checker_refuses_the_whole_answer_as_a_proof(wasm_lean, monkeypatch) -> None:  # noqa: F811
    """Screen and extraction both switched off: the checker gets each hack's whole text as the
    proof (an axiom, `run_cmd`, an instance or a theorem before or after it included). Lean's
    parse of `<statement> :=` followed by it must still refuse or fail it, so the hacks that
    extraction stops above (text before a restated theorem) are not safe by extraction alone."""
    import gyms.lean.episode as episode
    from gyms.lean.extract import MAX_PROOF_CHARS, Proof, normalise

    monkeypatch.setattr(episode, "screen", lambda proof: [])
    monkeypatch.setattr(episode, "extract_proof", lambda answer, statement, name: Proof(normalise(answer)))
    gym = LeanGym()
    target = gym.tasks()[0]
    hacks = [a for a in attacks(target.metadata["statement"], target.metadata["name"]) if len(a.answer) <= MAX_PROOF_CHARS]
    problems = _refused_by_the_checker(gym, target, hacks)
    assert not problems, "\n".join(problems)
