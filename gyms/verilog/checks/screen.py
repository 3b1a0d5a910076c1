"""A lexical screen of a candidate design: one linear pass over the raw text, before pyslang.

pyslang elaborates what it believes the code means; each simulator has its own preprocessor,
predefined macros, constant evaluation and lexer corners, so a screen built on elaboration
alone can be bypassed wherever they disagree (code in an `ifdef VERILATOR branch, a generate
branch one tool thinks inactive, an escaped identifier a simulator runs as a system task).
This scan needs no elaboration: it tokenizes every line, whatever branch or constant it sits
in, skipping only comments and string literals, and refuses:

* every compiler directive but `timescale, `default_nettype and `resetall: no `define,
  `ifdef/`ifndef/`elsif/`else/`endif, `include, `undef, no macro use at all (so nothing a
  preprocessor decides can differ between the screen and the simulator);
* escaped identifiers (`\\$display `), and any `\\` outside a string;
* system names (`$...`) outside the allow-list given by the caller ($c, $system, file I/O,
  plusargs, $finish, $root...);
* `force`, `release`, `deassign`, `bind`, `defparam`, `config`; DPI (`import "DPI-C"`);
* dotted names (`tb.dut.x`, `gen[0].q`): hierarchical references, struct members included;
* strings that do not end on their line, triple-quoted strings, unterminated comments,
  control characters and non-ASCII text outside comments and strings;
* nesting deeper than MAX_DEPTH and statements longer than MAX_STATEMENT_TOKENS, which no
  design needs and which make pyslang recurse until it crashes, or slow down quadratically;
* where the caller names a simulator's lexer limit (`max_token_chars`), a token longer than it,
  as that lexer measures one: an identifier, a number's size and its base and digits, a string
  from its opening quote, a // comment from its slashes (Icarus: docs/gyms/verilog.md).
"""

from __future__ import annotations

import re
from collections.abc import Collection

ALLOWED_DIRECTIVES = frozenset({"timescale", "default_nettype", "resetall"})
FORBIDDEN_KEYWORDS = frozenset({"force", "release", "deassign", "bind", "defparam", "config"})
MAX_PROBLEMS = 4
MAX_DEPTH = 128  # brackets, and blocks (begin, case, fork...), each counted separately
MAX_STATEMENT_TOKENS = 8192  # tokens between two semicolons
_OPEN, _CLOSE = "([{", ")]}"
_BLOCK_OPEN = frozenset({"begin", "fork", "case", "casex", "casez", "randcase", "generate", "function", "task",
                         "module", "specify"})  # fmt: skip
_BLOCK_CLOSE = frozenset({"end", "join", "join_any", "join_none", "endcase", "endgenerate", "endfunction",
                          "endtask", "endmodule", "endspecify"})  # fmt: skip

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_SYSTEM = re.compile(r"\$[A-Za-z0-9_$]*")
_STRING_BODY = re.compile(r'(?:[^"\\\n]|\\[^\n])*')  # disjoint alternatives: linear
_NUMBER = re.compile(r"[0-9][0-9_]*(?:\.[0-9_]+)?(?:[eE][+-]?[0-9_]+)?")
_BASE = re.compile(r"'[sS]?([bBoOdDhH])[ \t]*")
_DIGITS = {
    "b": re.compile(r"[01xXzZ?_]*"),
    "o": re.compile(r"[0-7xXzZ?_]*"),
    "d": re.compile(r"[0-9xXzZ?_]*"),
    "h": re.compile(r"[0-9a-fA-FxXzZ?_]*"),
}
_SPACE = " \t\r\n"


def screen(source: str, allowed_system_names: Collection[str], max_token_chars: int | None = None) -> list[str]:
    """Problems found (one line each, at most MAX_PROBLEMS); empty when the text is clean."""
    problems: list[str] = []
    tokens: list[tuple[str, str, int]] = []  # (kind, text, line) of significant tokens
    i, n, line = 0, len(source), 1

    def refuse(message: str) -> None:
        if message not in problems:
            problems.append(message)

    def measure(what: str, length: int) -> None:
        if max_token_chars is not None and length > max_token_chars:
            refuse(f"line {line}: {what} is {length:,} characters long; the simulator's lexer takes at most "
                   f"{max_token_chars:,} characters in one token: shorten it.")  # fmt: skip

    while i < n and len(problems) < MAX_PROBLEMS:
        c = source[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in " \t\r":
            i += 1
        elif source.startswith("//", i):
            end = source.find("\n", i)
            end = n if end < 0 else end
            if source[i:end].rstrip("\r").endswith("\\"):
                refuse(f"line {line}: a // comment may not end in a backslash.")
            measure("a // comment", end - i)
            i = end
        elif source.startswith("/*", i):
            end = source.find("*/", i + 2)
            if end < 0:
                refuse(f"line {line}: a /* comment is never closed.")
                break
            line += source.count("\n", i, end)
            i = end + 2
        elif c == '"':
            if source.startswith('"""', i):
                refuse(f"line {line}: triple-quoted strings are not allowed.")
                break
            end = _STRING_BODY.match(source, i + 1).end()
            if end >= n or source[end] != '"':
                refuse(f"line {line}: a string literal must end on the line it starts.")
                break
            measure("a string literal", end - i)  # the opening quote and the text, as Icarus counts
            tokens.append(("string", "", line))
            i = end + 1
        elif c == "`":
            name = _IDENT.match(source, i + 1)
            word = name.group(0) if name else ""
            if not word:
                refuse(f"line {line}: a stray ` (backtick) is not allowed outside comments and strings.")
            elif word not in ALLOWED_DIRECTIVES:
                refuse(f"line {line}: `{word} is not allowed: no macros or conditional compilation "
                       f"(only {', '.join('`' + d for d in sorted(ALLOWED_DIRECTIVES))}).")  # fmt: skip
            i = name.end() if name else i + 1
        elif c == "\\":
            refuse(f"line {line}: escaped identifiers (\\name) are not allowed; use plain names.")
            i += 1
        elif c == "$":
            word = _SYSTEM.match(source, i).group(0)
            if word not in allowed_system_names:
                refuse(f"line {line}: {word} may not be used in a design here (no file, plusarg, "
                       "simulation-control or C-code system tasks).")  # fmt: skip
            tokens.append(("system", word, line))
            i += len(word)
        elif c.isascii() and (c.isalpha() or c == "_"):
            word = _IDENT.match(source, i).group(0)
            if word in FORBIDDEN_KEYWORDS:
                refuse(f"line {line}: `{word}` is not allowed in a design here.")
            measure("an identifier", len(word))
            tokens.append(("ident", word, line))
            i += len(word)
        elif c.isdigit() or (c == "'" and _BASE.match(source, i)):
            end = _number_end(source, i)
            # A lexer reads a sized number's size and its base with digits as two tokens.
            tick = source.find("'", i, end)
            size = len(source[i:tick].rstrip(" \t")) if tick >= 0 else end - i
            measure("a number", max(size, end - tick if tick >= 0 else 0))
            i = end
            tokens.append(("number", "", line))
        elif c.isascii() and c.isprintable():
            tokens.append(("punct", c, line))
            i += 1
        else:
            refuse(f"line {line}: character {c!r} is not allowed outside comments and strings.")
            i += 1
    problems += _token_problems(tokens)
    problems += _size_problems(tokens)
    return problems[:MAX_PROBLEMS]


def _size_problems(tokens: list[tuple[str, str, int]]) -> list[str]:
    brackets = blocks = ifs = statement = 0
    for kind, text, line in tokens:
        statement += 1
        if kind == "punct":
            if text == ";":
                statement = ifs = 0
            brackets += (text in _OPEN) - (text in _CLOSE)
        elif kind == "ident":
            blocks += (text in _BLOCK_OPEN) - (text in _BLOCK_CLOSE)
            ifs = ifs + 1 if text == "if" else ifs
        if max(brackets, blocks, ifs) > MAX_DEPTH:
            return [f"line {line}: the code is nested more than {MAX_DEPTH} levels deep; flatten it."]
        if statement > MAX_STATEMENT_TOKENS:
            return [f"line {line}: a statement longer than {MAX_STATEMENT_TOKENS} tokens; split it."]
    return []


def _number_end(source: str, i: int) -> int:
    if source[i].isdigit():
        i = _NUMBER.match(source, i).end()
        j = i
        while j < len(source) and source[j] in " \t":
            j += 1
        if not _BASE.match(source, j):
            return i
        i = j
    base = _BASE.match(source, i)
    return _DIGITS[base.group(1).lower()].match(source, base.end()).end()


def _token_problems(tokens: list[tuple[str, str, int]]) -> list[str]:
    """Patterns over significant tokens: dotted names and DPI imports."""
    found: list[str] = []
    none = ("", "", 0)
    for k, (kind, text, line) in enumerate(tokens):
        before = tokens[k - 1] if k else none
        after = tokens[k + 1] if k + 1 < len(tokens) else none
        if (kind, text) == ("punct", ".") and after[0] == "ident" and (
            before[0] in ("ident", "system") or before in (("punct", "]", before[2]), ("punct", ")", before[2]))
        ):
            found.append(f"line {line}: hierarchical or dotted names ({before[1]}.{after[1]}) are not allowed; "
                         "use plain signals.")  # fmt: skip
        elif kind == "ident" and text in ("import", "export") and after[0] == "string":
            found.append(f"line {line}: DPI imports and exports are not allowed; write the logic in Verilog.")
        if len(found) >= MAX_PROBLEMS:
            break
    return found
