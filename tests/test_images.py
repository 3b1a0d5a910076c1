"""Toolchain image recipes (gyms/images.py), without a daemon: what a recipe may say, what the
tag hashes, and what a build copies into the image's root (tests/test_docker_gyms.py and
tests/test_docker_sandbox.py build and run the real images)."""

from __future__ import annotations

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
