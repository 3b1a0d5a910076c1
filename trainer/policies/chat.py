"""Chat templates at the token level, one message at a time.

A multi-turn prompt is never rendered whole: turn k's prompt ids are turn k-1's prompt and
response ids as sampled, then the ids of what the template puts between the end of an answer
and the next answer: the feedback message and the generation prompt (`after_answer`). So the
model sees its own answers as it produced them, and the learner trains on one sequence
(trainer/types.py).

- `ChatTemplate`: a transformers tokenizer's own chat template (`hf`, `vllm`). A message's ids
  are the difference between rendering an anchor conversation with and without it, so whatever
  the template writes per message (role headers, end-of-turn tokens) comes from the template.
  After an answer's end-of-sequence token the template's closing of a message follows (ChatML's
  newline after `<|im_end|>`): the ids a rendered message has after its end-of-sequence token.
- `PlainTemplate`: a tokenizer without a chat template (`tiny`'s bytes, or an `hf` tokenizer
  with none): the first message is its text as it is, each later message
  `"\\n\\n{role}:\\n{content}\\n\\nassistant:\\n"`.

A feedback role the template cannot render (a `tool` message in a template without one) is
rendered as `user`.

A message's content is text (`ContentText`): the task's prompt, the gym's feedback and whatever
answer it quotes may hold the strings of the tokenizer's added tokens (`<|im_end|><|im_start|>system`),
and those become the characters they are, never the tokens' ids, so no one can write a turn the
template did not. Only the template's own text yields special ids.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trainer.types import USER, Message

_ANCHOR = (Message(USER, "."),)  # what the message of `after_answer` is rendered after
_PROBE = "heavygym-role-probe"


def text_encoder(tok: Any) -> Callable[[str], list[int]]:
    """Encodes text with none of `tok`'s added tokens recognised: their strings become ordinary
    tokens. For other text the ids are `tok`'s own."""
    backend = getattr(tok, "backend_tokenizer", None)
    if backend is None:  # a slow tokenizer: transformers splits its special tokens (not other added ones)
        return lambda text: list(tok.encode(text, add_special_tokens=False, split_special_tokens=True))
    from tokenizers import AddedToken, Tokenizer

    # A copy in which every added token is special, so that encode_special_tokens covers them all
    # (it skips special ones only; Qwen3's <think> and <tool_call> are added but not special).
    copy = Tokenizer.from_str(backend.to_str())
    copy.add_special_tokens([
        AddedToken(t.content, single_word=t.single_word, lstrip=t.lstrip, rstrip=t.rstrip,
                   normalized=t.normalized, special=True)
        for t in tok.added_tokens_decoder.values()
    ])  # fmt: skip
    copy.encode_special_tokens = True
    return lambda text: copy.encode(text, add_special_tokens=False).ids


class ContentText:
    """Renders messages with a chat template, their contents as text (the module's docstring).

    Each added token's string in a content is swapped for a private-use character that occurs in
    no content before rendering, so every added token left in the rendered text is the
    template's; the stretches between those that hold a swapped character get their strings
    back and are encoded with no added token recognised. Contents without such strings are
    rendered and encoded exactly as the tokenizer does (the same ids as before)."""

    def __init__(self, tok: Any) -> None:
        self.tok = tok
        self.text = text_encoder(tok)
        added = sorted({t.content for t in tok.added_tokens_decoder.values()}, key=len, reverse=True)
        self._added = re.compile("|".join(map(re.escape, added))) if added else None
        self._ids = {t.content: i for i, t in tok.added_tokens_decoder.items()}

    def encode(self, messages: Sequence[Message], generation_prompt: bool) -> list[int]:
        swaps: dict[str, str] = {}  # private-use character -> the added token's string it stands for
        if self._added is not None and any(self._added.search(m.content) for m in messages):
            found = sorted({s for m in messages for s in self._added.findall(m.content)})
            used = set("".join(m.content for m in messages))
            free = (chr(c) for c in (*range(0xE000, 0xF900), *range(0xF0000, 0xFFFFE)) if chr(c) not in used)
            swaps = {next(free): s for s in found}
            by_string = {s: c for c, s in swaps.items()}
            messages = [Message(m.role, self._added.sub(lambda x: by_string[x.group()], m.content)) for m in messages]
        rendered = self.tok.apply_chat_template(
            [{"role": m.role, "content": m.content} for m in messages], add_generation_prompt=generation_prompt,
            tokenize=not swaps,
        )
        if not swaps:
            return list(rendered["input_ids"] if isinstance(rendered, Mapping) else rendered)
        ids: list[int] = []
        for piece in re.split(f"({self._added.pattern})", rendered):  # type: ignore[union-attr]
            if piece in self._ids:
                ids.append(self._ids[piece])  # the template's own token
            elif piece:
                ids += self.text(piece.translate({ord(c): string for c, string in swaps.items()}))
        return ids


class PlainTemplate:
    def __init__(self, encode: Callable[[str], list[int]]) -> None:
        self.encode = encode

    def first(self, text: str) -> list[int]:
        return self.encode(text)

    def after_answer(self, message: Message) -> list[int]:
        return self.encode(f"\n\n{message.role}:\n{message.content}\n\nassistant:\n")


class ChatTemplate:
    def __init__(self, tok: Any) -> None:
        self.tok = tok
        self.eos_id = tok.eos_token_id
        self._roles: dict[str, str] = {}  # a feedback role -> the role it is rendered as
        self._contents = ContentText(tok)
        base = self.render(_ANCHOR, generation_prompt=False)
        # What the template writes after a message's end-of-sequence token (ChatML: a newline).
        self._closing = base[len(base) - base[::-1].index(self.eos_id) :] if self.eos_id in base else []

    def render(self, messages: Sequence[Message], generation_prompt: bool) -> list[int]:
        return self._contents.encode(messages, generation_prompt)

    def first(self, text: str) -> list[int]:
        return self.render([Message(USER, text)], generation_prompt=True)

    def after_answer(self, message: Message) -> list[int]:
        message = Message(self._role(message.role), message.content)
        base = self.render(_ANCHOR, generation_prompt=False)
        full = self.render([*_ANCHOR, message], generation_prompt=True)
        if full[: len(base)] != base:
            raise ValueError(
                "the model's chat template renders earlier messages differently once a message follows them, "
                "so a conversation cannot grow by appending tokens: use a template that renders each message "
                "on its own (ChatML, as Qwen3's)"
            )
        return self._closing + full[len(base) :]

    def _role(self, role: str) -> str:
        if role not in self._roles:
            try:
                rendered = self.tok.decode(self.render([*_ANCHOR, Message(role, _PROBE)], generation_prompt=True))
                self._roles[role] = role if _PROBE in rendered else USER
            except Exception:  # the template refuses the role (jinja raises): render it as a user's
                self._roles[role] = USER
        return self._roles[role]
