"""The Modelica task catalog, the answer extraction, the library summary and the known candidates."""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path

import pytest
from conftest import reply_shapes

from gyms.modelica import ModelicaGym
from gyms.modelica.catalog import TaskFileError, load_catalog, load_task_file
from gyms.modelica.extract import defined_classes, extract_source, fenced_blocks
from gyms.modelica.library import LIBRARY_NAME, LIBRARY_ROOT, PACKAGES, summary
from gyms.modelica.mutations import missing_equation, syntax_error, unbalanced
from gyms.modelica.openmodelica import screen

MODEL = "model A\n  Real x(start = 1, fixed = true);\nequation\n  der(x) = -x;\nend A;"


def test_the_catalog_has_enough_tasks_of_every_kind():
    specs = load_catalog()
    assert len(specs) >= 25
    families = Counter(spec.id.split("/")[0] for spec in specs)
    assert set(families) == {"ode", "dae", "event", "sample", "lib", "fit"}
    assert all(count >= 3 for count in families.values()), families
    assert {spec.split for spec in specs} == {"train", "test"}


def test_every_task_has_wrong_variants_and_the_right_features():
    for spec in load_catalog():
        assert spec.mutations, f"{spec.id} has no semantic wrong variant"
        assert all(f"`{v}`" in spec.spec or v in spec.spec for v in spec.setup.variables), spec.id
        family = spec.id.split("/")[0]
        if family == "event":
            assert re.search(r"\bwhen\b|\bif\b", spec.reference), spec.id
        if family == "sample":
            assert "sample(" in spec.reference, spec.id
        if family == "lib":
            assert LIBRARY_NAME in spec.reference and spec.uses, spec.id
        if family == "fit":
            assert spec.setup.tune and spec.setup.requirements, spec.id


def test_prompts_state_the_set_up_and_document_the_library():
    tasks = {t.id: t for t in ModelicaGym().tasks("train")}
    prompt = tasks["lib/dc-motor"].prompt
    assert "model named `DCMotor`" in prompt and "`rotor.w`, `La.i`" in prompt
    assert "model EMF" in prompt and "connector Flange" in prompt  # its packages' interfaces
    assert "package HeavyLib.Thermal" not in prompt  # and only those
    assert "```modelica" in prompt
    fit = tasks["fit/pi-tuning"].prompt
    assert "`parameter Real Kp = <value>;`" in fit and "overshoots its final value 1 by at most 10%" in fit


def write_task(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "task.toml"
    path.write_text(text)
    return path


GOOD = """
id = "ode/t"
model = "A"
spec = "x decays"
stop_time = 1.0
intervals = 10
variables = ["x"]
reference = '''MODEL'''
""".replace("MODEL", MODEL)


def test_a_minimal_task_file_loads_with_defaults(tmp_path):
    spec = load_task_file(write_task(tmp_path, GOOD))
    assert spec.split == "train" and spec.setup.rtol == 1e-3
    assert spec.setup.event_window == pytest.approx(1e-4)
    assert spec.task().metadata["variables"] == ("x",)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('colour = "red"', "unknown key(s) colour"),
        ('split = "dev"', "split 'dev' is not one of train, test"),
        ('uses = ["Hydraulics"]', "HeavyLib has no package(s) Hydraulics"),
        ('tune = ["k"]', "tuned parameter 'k' is not declared"),
        ('[mutations]\nsign = ["+x", "-x"]', "occurs 0 times in the reference, not once"),
        ('[mutations]\nsign = ["-x"]', 'must be ["text in the reference", "replacement"]'),
        ('[[requirements]]\nkind = "overshoot"\nvariable = "x"', "a overshoot requirement needs max, target, variable"),
        ('[[requirements]]\nkind = "rise"\nvariable = "x"', "requirement kind 'rise' is not one of"),
    ],
)
def test_malformed_task_files_say_what_is_wrong(tmp_path, extra, message):
    with pytest.raises(TaskFileError, match=re.escape(message)):
        load_task_file(write_task(tmp_path, GOOD + extra + "\n"))


def test_a_reference_must_define_the_model(tmp_path):
    with pytest.raises(TaskFileError, match="does not define model B"):
        load_task_file(write_task(tmp_path, GOOD.replace('model = "A"', 'model = "B"')))


@pytest.mark.parametrize(
    ("answer", "source"),
    [
        (f"Here it is:\n```modelica\n{MODEL}\n```\nDone.", MODEL),
        (f"```Modelica\nmodel A end A;\n```\nBetter:\n```modelica\n{MODEL}\n```", MODEL),  # the last block wins
        (f"```\n{MODEL}\n```", MODEL),  # an unlabelled block that defines a class
        (f"I model the decay as follows.\n{MODEL}\nThat is all.", MODEL),  # bare, prose around it
        ("```modelica\nmodel A\n  Real x;\nequation\n  x = 1;", "model A\n  Real x;\nequation\n  x = 1;"),  # unclosed fence
        ("The answer is 42.", None),
        ("```python\nprint('model A')\n```", None),
        ("", None),
    ],
)
def test_extracts_the_model_from_the_answer(answer, source):
    assert extract_source(answer) == source


@pytest.mark.parametrize("shape", reply_shapes("x", "modelica"))
def test_the_model_is_found_in_every_shape_of_reply(shape):
    """Normalised once (no BOM, LF line endings): the compiler and the OpenModelica screen get the same text."""
    assert extract_source(reply_shapes(MODEL, "modelica")[shape]) == MODEL
    external = MODEL.replace("equation", 'function f\n  output Real y;\n  external "C" y = g();\nend f;\nequation')
    hidden = extract_source(reply_shapes(external, "modelica")[shape])
    assert hidden is not None and "\r" not in hidden and screen(hidden) is not None


def test_defined_classes_lists_nested_and_partial_classes():
    assert defined_classes("model A\n function f\n end f;\nend A;\npartial block B\nend B;") == ["A", "f", "B"]


def test_the_library_summary_lists_every_class_without_equations():
    text = summary(PACKAGES)
    for package in PACKAGES:
        source = (LIBRARY_ROOT / LIBRARY_NAME / f"{package}.mo").read_text()
        for name in re.findall(r"^  (?:partial )?(?:model|block|connector) (\w+)", source, re.MULTILINE):
            assert re.search(rf"(model|block|connector) {name}\b", text), name
    assert "parameter Real R = 1" in text and "equation" not in text
    with pytest.raises(ValueError, match="has no package"):
        summary(["Fluid"])


def test_structural_mutations():
    assert syntax_error(MODEL).count(";") == MODEL.count(";") - 1
    assert 'Real unconstrained "declared, but no equation defines it";' in unbalanced(MODEL, "A").splitlines()[1]
    assert "der(x)" not in missing_equation(MODEL)
    assert missing_equation("model A\n  Real x = 1;\nend A;") is None


def test_candidates_cover_the_promised_kinds():
    gym = ModelicaGym()
    labels = Counter()
    for task in gym.tasks("train") + gym.tasks("test"):
        candidates = gym.candidates(task, random.Random(0))
        assert candidates[0].label == "reference" and candidates[0].expect == "pass"
        labels.update(c.label for c in candidates)
    for label in ("changed-parameter", "sign-error", "dropped-event", "missing-equation", "syntax-error", "unbalanced", "blows-up", "never-ends", "equivalent"):
        assert labels[label] >= 1, label
    assert labels["changed-parameter"] == len(load_catalog())


# Inputs that made the old extractor quadratic (1-2.5 s at 60 KB, minutes at 400 KB): a header
# search per header, a multi-line header prefix that backtracked, a fence regex per backtick.
DEGENERATE = {
    "distinct headers": "".join(f"model M{i}\n" for i in range(7000))[:60_000],
    "partial lines": "partial\n" * 7_500,
    "backticks": "`" * 60_000,
    "unclosed labelled fences": "```modelica" * 5_000,
    "end lines": "end A;\n" * 8_000 + "model A\n",
}


@pytest.mark.parametrize("label", DEGENERATE)
def test_degenerate_answers_hold_no_model(label):
    assert extract_source(DEGENERATE[label]) is None


def test_a_model_after_degenerate_text_is_still_found():
    noise = "".join(f"model M{i}\n" for i in range(3000)) + "```" * 3000 + "\n"
    assert extract_source(noise + f"```modelica\n{MODEL}\n```") == MODEL
    assert extract_source(noise + MODEL) is not None  # bare: from the first header with an end to the last end


def test_fences_open_and_close_anywhere_in_a_line():
    assert fenced_blocks("a ```Modelica info\nx\n``` b\n```\ny") == [("modelica", "x\n"), ("", "y")]
