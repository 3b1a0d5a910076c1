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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trainer.types import USER, Message

_ANCHOR = (Message(USER, "."),)  # what the message of `after_answer` is rendered after
_PROBE = "heavygym-role-probe"


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
        base = self.render(_ANCHOR, generation_prompt=False)
        # What the template writes after a message's end-of-sequence token (ChatML: a newline).
        self._closing = base[len(base) - base[::-1].index(self.eos_id) :] if self.eos_id in base else []

    def render(self, messages: Sequence[Message], generation_prompt: bool) -> list[int]:
        ids = self.tok.apply_chat_template(
            [{"role": m.role, "content": m.content} for m in messages], add_generation_prompt=generation_prompt
        )
        return list(ids["input_ids"] if isinstance(ids, Mapping) else ids)

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
