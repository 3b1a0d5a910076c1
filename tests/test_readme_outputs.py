"""Every predicted figure the README quotes is a command's output, regenerated here: the text must be
what the command prints at this commit (harness/readme_outputs.py; `python -m harness.readme_outputs
README.md` rewrites them)."""

from __future__ import annotations

import pytest
from conftest import ROOT

from harness import readme_outputs


def test_the_readme_quotes_what_its_commands_print():
    found = readme_outputs.blocks(ROOT / "README.md")
    assert len(found) >= 3  # the headline run's prediction, the cluster with gym nodes, the planner's check
    stale = [b.command for b in found if b.quoted != b.printed]
    assert not stale, f"README blocks out of date (python -m harness.readme_outputs README.md): {stale}"


def test_a_stale_block_is_found_and_rewritten(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("intro\n<!-- output of: harness metrics --help -->\n```text\nold\n```\n<!-- end of output -->\nend\n")
    (stale,) = readme_outputs.check(page)
    assert stale.quoted == "old\n" and "Usage" in stale.printed
    assert readme_outputs.write(page) == 1 and readme_outputs.check(page) == []
    assert page.read_text().startswith("intro\n") and page.read_text().endswith("end\n")


def test_a_failing_command_is_named():
    with pytest.raises(ValueError, match="`harness simulate --run nowhere` exited 2"):
        readme_outputs.run("harness simulate --run nowhere", ROOT)
