"""The growing conversation: how many tokens a multi-turn episode's prompt gains each turn.

A real model's turn k + 1 prompt is turn k's prompt and response ids as sampled, then the chat
template's ids for the gym's feedback and the next generation prompt (trainer/policies/learner.py,
`Learner.prompt_ids`); the learner trains the last turn's prompt and response as one sequence.
The replay policy has no tokenizer, so it estimates the feedback's ids from its text
(`feedback_tokens`) and builds its emulated prompt ids the same way (trainer/policies/replay.py);
the simulator, the planner and the replay-latency gym count with the same rule in means
(`prompt_tokens_at`, `sequence_tokens`), and a cost card records the estimate of its gym's real
feedback (harness/gymcost.py, harness/costcard.py).

An engine call charges prefill only for the prompt tokens beyond an episode's first prompt
(`prefill_tokens`): a profile's per-call and per-token figures were measured on first-turn
prompts, so their prefill is already inside them (trainer/policies/profiles.py).
"""

from __future__ import annotations

import math

# Why 4: the BPE vocabularies of current models (Qwen, Llama) average about 4 characters of English or code a token.
CHARS_PER_TOKEN = 4
# Why 9: ChatML wraps a message, opens the next answer: \n<|im_start|>ROLE\n ... <|im_end|>\n<|im_start|>assistant\n
TEMPLATE_TOKENS = 9


def feedback_tokens(text: str) -> int:
    """The estimated prompt tokens one feedback message adds: its text, and its template."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) + TEMPLATE_TOKENS


def feedback_of(text: str, tokens: float) -> str:
    """`text`, padded with spaces until `feedback_tokens` estimates it at `tokens` (rounded), or
    as it is where it is that long already: a feedback message of a given size."""
    chars = (round(tokens) - TEMPLATE_TOKENS) * CHARS_PER_TOKEN
    return text.ljust(chars)


def next_prompt_tokens(prompt: float, response: float, feedback: float) -> float:
    """The next turn's prompt tokens: this turn's prompt, its response, and the feedback on it."""
    return prompt + response + feedback


def prompt_tokens_at(turn: int, first: float, response: float, feedback: float) -> float:
    """Turn `turn`'s (1-based) prompt tokens, each turn before it adding `response` and `feedback`."""
    prompt = first
    for _ in range(turn - 1):
        prompt = next_prompt_tokens(prompt, response, feedback)
    return prompt


def sequence_tokens(turns: int, first: float, response: float, feedback: float) -> float:
    """The one sequence a trajectory of `turns` turns trains on: its last turn's prompt and response."""
    return prompt_tokens_at(turns, first, response, feedback) + response


def prefill_tokens(prompt: float, first: float) -> float:
    """The prompt tokens an engine call charges prefill for: those beyond the episode's first prompt."""
    return max(0.0, prompt - first)
