"""Plugin loading through the `heavygym.gyms` entry-point group, as installed packages see it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import harness, with_path

from gyms import GymLoadError, UnknownGymError, UnknownGymOptionError, make, registered


def run_python(code: str, *dirs: Path) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env={**os.environ, **with_path(*dirs)}, timeout=120)  # fmt: skip


@pytest.fixture(scope="module")
def broken_plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An installed distribution whose gym module fails to import."""
    root = tmp_path_factory.mktemp("broken")
    dist = root / "heavygym_broken-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: heavygym-broken\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[heavygym.gyms]\nbroken = heavygym_broken:Gym\n")
    (root / "heavygym_broken.py").write_text("import a_module_that_does_not_exist\n")
    return root


def test_builtin_gyms_are_registered_through_the_entry_point_group():
    entries = registered()
    assert entries["math"].target == "gyms.math:MathGym"
    assert entries["math"].distribution == "heavygym"


def test_unknown_name_suggests_the_closest():
    with pytest.raises(UnknownGymError, match="Did you mean 'math'"):
        make("maht")


def test_module_path_loads_a_gym_without_registration():
    gym = make("toy_gyms:ToyGym", max_turns="2")
    assert gym.name == "toy" and gym.max_turns == 2


def test_bad_options_name_the_gym():
    with pytest.raises(GymLoadError, match="bad options"):
        make("toy_gyms:GateGym")  # its option gate has no default


def test_an_unknown_option_is_named_with_the_gyms_options_and_the_closest():
    with pytest.raises(UnknownGymOptionError) as caught:
        make("toy_gyms:ToyGym", colour="blue")
    assert str(caught.value) == "gym 'toy_gyms:ToyGym' has no option 'colour'; its options are: max_turns, tasks"
    with pytest.raises(UnknownGymOptionError, match=r"no option 'sorce' \(did you mean 'source'\?\); its options are: source, "):
        make("math", sorce="x")
    # a wrapper that takes any option passes them on; its inner gym names the unknown one
    with pytest.raises(UnknownGymOptionError, match="gym 'math' has no option 'sorce'"):
        make("harness.control:InstantGym", of="math", sorce="x")


def test_every_command_names_an_unknown_gym_option_in_one_line():
    out = harness("gyms", "check", "math", "-o", "nosuch=1")
    assert out.returncode == 2 and "Traceback" not in out.stderr + out.stdout
    assert out.stderr.strip() == ("error: gym 'math' has no option 'nosuch'; its options are: source, size, seed, "
                                  "max_turns, test_source, emulated_check_s")  # fmt: skip


def test_example_plugin_loads_through_its_entry_point(example_plugin):
    out = run_python(
        """
        import json
        from gyms import make, registered
        gym = make("reverse")
        ep = gym.open(gym.tasks()[0])
        print(json.dumps([registered()["reverse"].distribution, ep.step("xobdnas").outcome.value]))
        """,
        example_plugin,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == ["heavygym-example-gym", "pass"]


def test_a_broken_plugin_is_named_and_does_not_stop_the_others(broken_plugin, example_plugin):
    out = run_python(
        """
        from gyms import GymLoadError, make
        try:
            make("broken")
        except GymLoadError as exc:
            print("ERROR", exc)
        print("OK", make("reverse").name, make("math").name)
        """,
        broken_plugin,
        example_plugin,
    )
    assert out.returncode == 0, out.stderr
    assert "ERROR gym 'broken' (from heavygym-broken) failed to load: ModuleNotFoundError" in out.stdout
    assert "OK reverse math" in out.stdout


def test_gyms_list_shows_every_gym_and_the_broken_one(broken_plugin, example_plugin):
    out = harness("gyms", "list", env={**with_path(broken_plugin, example_plugin), "COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    rows = {line.split("│")[1].strip(): line for line in out.stdout.splitlines() if line.count("│") > 3}
    assert {"math", "reverse", "broken"} <= set(rows)
    assert "heavygym-example-gym" in rows["reverse"] and " 6 " in rows["reverse"]
    assert "broken:" in rows["broken"] and "ModuleNotFoundError" in rows["broken"]
    assert "ok" in rows["math"]


def test_gyms_list_tasks_prints_one_task_id_a_line():
    out = harness("gyms", "list", "math", "--tasks")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [t.id for t in make("math").tasks()]
    out = harness("gyms", "list", "math", "-o", "size=3", "--tasks", "--split", "test")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [t.id for t in make("math", size="3").tasks("test")]
    out = harness("gyms", "list", "--tasks")
    assert out.returncode == 2 and "harness gyms list NAME --tasks" in out.stderr


def test_cli_errors_are_one_readable_line():
    out = harness("gyms", "check", "maht")
    assert out.returncode == 2
    assert "Did you mean 'math'" in out.stderr
    assert "Traceback" not in out.stderr + out.stdout
