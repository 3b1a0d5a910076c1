"""gyms/answer_text.py: the one reading of a reply that every gym's extraction starts from.

The degenerate inputs are at the answer cap and made to hurt a scan that restarts per match;
under the pytest timeout a quadratic scan fails (no wall clock is asserted).
"""

from __future__ import annotations

import pytest

from gyms.answer_text import (
    MAX_ANSWER_BYTES,
    Fence,
    fenced_blocks,
    normalise,
    outside_fences,
    oversize,
    without_think,
)


def test_oversize_counts_utf8_bytes() -> None:
    assert oversize("a" * MAX_ANSWER_BYTES) is None
    assert oversize("a" * (MAX_ANSWER_BYTES + 1)) == MAX_ANSWER_BYTES + 1
    assert oversize("é" * (MAX_ANSWER_BYTES // 2 + 1)) == MAX_ANSWER_BYTES + 2  # 2 bytes each
    assert oversize("\ud800", limit=2) == 3  # a lone surrogate is measured, not an exception


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\ufeffa\r\nb\rc\n", "a\nb\nc\n"),
        ("a\ufeff", "a\ufeff"),  # only a leading mark is the client's
        ("\uff13 \U0001d7d1 \u0663", "\uff13 \U0001d7d1 \u0663"),  # digits kept unless asked
    ],
)
def test_normalise(text: str, expected: str) -> None:
    assert normalise(text) == expected


def test_nfkc_digits_are_ascii_digits_but_powers_stay() -> None:
    assert normalise("\uff13\uff14 \U0001d7d1 x\u00b2 H\u2082O \u00bd \u0663", nfkc_digits=True) == (
        "34 3 x\u00b2 H\u2082O \u00bd \u0663"  # superscripts, fractions, other scripts unchanged
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>draft</think>answer", "answer"),
        ("a<THINK>x</Think>b<think>y</think>c", "abc"),
        ("reasoning</think>answer", "answer"),  # the chat template opened the block
        ("a<think>cut off", "a<think>cut off"),  # unclosed: kept
        ("a</think>b</think>c", "b</think>c"),  # only text before the first closing is reasoning
        ("İ<think>x</think>y", "İy"),  # case folding that changes lengths is not applied
    ],
)
def test_without_think(text: str, expected: str) -> None:
    assert without_think(text) == expected


def test_fenced_blocks_tags_bodies_and_spans() -> None:
    text = "a ```Verilog info\nx\n``` b\n```\ny"
    blocks = fenced_blocks(text)
    assert [(b.tag, b.body, b.closed) for b in blocks] == [("verilog", "x\n", True), ("", "y", False)]
    assert outside_fences(text, blocks) == "a  b\n"
    assert blocks[0] == Fence("verilog", "x\n", 2, 23, True)


@pytest.mark.parametrize(
    ("text", "bodies"),
    [
        ("```lean\nproof\n```", ["proof\n"]),
        ("```\nend```", ["end"]),  # closed right after the code
        ("```sv\nmodule m; endmodule", ["module m; endmodule"]),  # cut off: runs to the end
        ("```sv\nmodule m; endmodule```  \n", ["module m; endmodule"]),
        ("```python\nx\n```\n```lean\ny\n```", ["x\n", "y\n"]),  # a closing fence opens nothing
        ("```", []),  # an opening whose line never ends has no body
    ],
)
def test_fenced_blocks_pair_each_opening_with_the_next_fence(text: str, bodies: list[str]) -> None:
    assert [b.body for b in fenced_blocks(text)] == bodies


DEGENERATE = {
    "fences": "```\n" * 16_000,
    "fence-openings": "```x" * 16_000,
    "think-openings": "<think>" * 9_000,
    "think-closings": "</think>" * 8_000,
    "think-pairs": "<think></think>" * 4_000,
}


@pytest.mark.timeout(20)
@pytest.mark.parametrize("label", list(DEGENERATE))
def test_degenerate_text_is_read_in_linear_time(label: str) -> None:
    text = DEGENERATE[label]
    for _ in range(20):
        blocks = fenced_blocks(without_think(normalise(text, nfkc_digits=True)))
        outside_fences(text, blocks)
