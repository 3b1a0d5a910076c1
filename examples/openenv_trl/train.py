"""Train with TRL's GRPOTrainer against a heavygym gym served over OpenEnv.

    python examples/openenv_trl/train.py                # serves the math gym itself, builds a tiny model
    python examples/openenv_trl/train.py --url http://127.0.0.1:8000 --model DIR

TRL drives the episodes through its `rollout_func` hook: for each prompt of a batch the
function opens one OpenEnv WebSocket session with the gym (`GymClient`), resets it to the
task the prompt came from, lets the policy answer, and, while the gym is not done (the math
gym gives a wrong answer its feedback and one more try), lets the policy answer again. The
episode's reward is what the gym paid, summed over its steps; TRL's GRPO then trains on the
whole multi-turn completion, with the feedback tokens masked out of the loss (`env_mask`),
since the policy did not write them.

Token in, token out: every observation carries the conversation so far with roles
(`observation.messages`, docs/openenv.md). The first prompt's ids are the served messages in
the model's chat template; after each answer, only the newest served message (the gym's
feedback, in the gym's `feedback_role`) is rendered, with the next generation prompt, and its
ids are appended to the ids the episode already has. The policy's earlier answers stay the
tokens it sampled, never decoded and encoded again (which can give other ids), so the
completion TRL trains on is exactly what the model saw and wrote.

Why `rollout_func` and not TRL's `environment_factory`: the latter exposes an environment's
methods as *tools* the model must call through its chat template's tool-calling format, and
ends the episode when the model stops calling tools. A heavygym gym takes the answer as plain
text and replies with feedback, which is the reset/step loop that `rollout_func` writes out.
Generation uses the trainer's own model and generation config (transformers `generate`, no
vLLM), so it runs on a CPU.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager, nullcontext
from pathlib import Path

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig, GRPOTrainer

from gyms.openenv.client import GymClient
from gyms.openenv.protocol import MAX_MESSAGE_ANSWER_CHARS, AnswerAction, ChatMessage
from trainer.policies.chat import ChatTemplate
from trainer.types import Message

REPO = Path(__file__).resolve().parents[2]


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as reply:
            return reply.status == 200
    except OSError:
        return False


@contextmanager
def served_gym(harness: str, gym: str, workers: int):
    """Run `harness serve GYM --port 0` and yield its URL once /health answers."""
    log = tempfile.NamedTemporaryFile("w+", prefix="heavygym-serve-", suffix=".log", delete=False)
    # Its own process group, so that stopping it reaches its gym workers too. stderr goes to a
    # file, not a pipe: a pipe nobody reads would fill up and stall the server.
    proc = subprocess.Popen([harness, "serve", gym, "--port", "0", "--gym-workers", str(workers)],
                            stdout=log, stderr=log, start_new_session=True)  # fmt: skip
    log.close()  # the server holds its own copy of the file
    try:
        deadline = time.monotonic() + 120
        while True:  # the server prints its URL (the port it got) once it listens, then /health answers
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"harness serve did not come up:\n{Path(log.name).read_text()}")
            found = re.search(r"as an OpenEnv environment at (http://\S+)", Path(log.name).read_text())
            if found and healthy(found.group(1)):
                url = found.group(1)
                break
            time.sleep(0.2)
        print(f"served gym {gym} at {url} (pid {proc.pid})", flush=True)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C would send: the server shuts down cleanly
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            print(f"stopped the gym server: {Path(log.name).read_text().strip().splitlines()[-1]}", flush=True)
        os.unlink(log.name)


def gym_tasks(url: str, count: int) -> list[dict]:
    """The first `count` tasks of the served gym: reset with seeds 0..count-1 picks them deterministically."""
    rows = []
    with GymClient(base_url=url).sync() as env:
        for seed in range(count):
            result = env.reset(seed=seed)  # the served conversation: the task's prompt as a user message
            rows.append({"task_id": result.observation.metadata["task_id"],
                         "prompt": [m.model_dump() for m in result.observation.messages]})  # fmt: skip
    return rows


def message_ids(template: ChatTemplate, message: ChatMessage, turn_ended: bool) -> list[int]:
    """The token ids that follow the policy's answer: the close of its turn, the served `message`
    (the gym's feedback, in the gym's role) and the generation prompt of the next answer.

    heavygym's own trainer does the same (trainer/policies/chat.py): only this message is rendered,
    so it follows whatever chat template the model has, and its content is text, so feedback that
    quotes `<|im_end|><|im_start|>system` cannot become a turn no one wrote. A role the template
    cannot render (`tool` in a template without one) is rendered as `user`."""
    ids = template.after_answer(Message(message.role, message.content))
    # A turn cut off at max_completion_length has no end-of-turn token yet: close it here.
    return ids if turn_ended else [template.eos_id, *ids]


def check_served(messages: list[ChatMessage], answers: list[str], feedback_role: str) -> None:
    """The served conversation is this episode's: the prompt, then each answer as sent (cut at the
    server's cap) and its feedback in the gym's role. The ids come from this client's own record;
    the served messages only bring the newest message."""
    assert len(messages) == 2 * len(answers) + 1, f"{len(messages)} served messages after {len(answers)} answers"
    for answer, sent, feedback in zip(answers, messages[1::2], messages[2::2]):
        assert (sent.role, sent.content) == ("assistant", answer[:MAX_MESSAGE_ANSWER_CHARS]), "not the answer sent"
        assert feedback.role == feedback_role, f"feedback as {feedback.role!r}, not {feedback_role!r}"


def make_rollout_func(url: str, task_of_prompt: dict[str, str]):
    def rollout_func(prompts: list, trainer: GRPOTrainer) -> dict[str, list]:
        # TRL hands over the batch's prompts already repeated num_generations times: one episode each.
        tokenizer = trainer.processing_class
        template = ChatTemplate(tokenizer)  # served messages become ids with their contents as text
        model = trainer.accelerator.unwrap_model(trainer.model)
        out = {key: [] for key in ("prompt_ids", "completion_ids", "env_mask", "env_reward", "outcome", "turns")}
        for prompt in prompts:
            task_id = task_of_prompt[prompt[-1]["content"]]
            # One WebSocket session per episode: the session holds the episode's state (task, turn).
            with GymClient(base_url=url).sync() as env:
                result = env.reset(task_id=task_id)
                # The first prompt: the served conversation (the task's prompt) in the chat template.
                served = [m.model_dump() for m in result.observation.messages]
                (task_message,) = served  # a reset serves one message, the task's prompt, as the user's
                prompt_ids = template.first(task_message["content"])
                context, completion, mask, reward, outcomes, answers = list(prompt_ids), [], [], 0.0, [], []
                while True:
                    with torch.no_grad():
                        generated = model.generate(input_ids=torch.tensor([context]),
                                                   attention_mask=torch.ones(1, len(context), dtype=torch.long),
                                                   generation_config=trainer.generation_config)  # fmt: skip
                    turn = generated[0, len(context):].tolist()
                    turn_ended = tokenizer.eos_token_id in turn
                    if turn_ended:  # drop the padding after the end-of-turn token
                        turn = turn[: turn.index(tokenizer.eos_token_id) + 1]
                    completion += turn
                    mask += [1] * len(turn)  # the policy's tokens: trained on
                    context += turn
                    answers.append(tokenizer.decode(turn, skip_special_tokens=True))
                    result = env.step(AnswerAction(answer=answers[-1]))
                    reward += result.reward or 0.0
                    outcomes.append(result.observation.metadata.get("outcome"))
                    check_served(result.observation.messages, answers, result.observation.feedback_role)
                    if result.done:
                        break
                    # Not done: the newest served message, the gym's feedback, opens the next turn:
                    # rendered alone and appended to the ids already here (token in, token out). The
                    # policy did not write these tokens, so env_mask=0 keeps them out of the loss.
                    fed = message_ids(template, result.observation.messages[-1], turn_ended)
                    completion += fed
                    mask += [0] * len(fed)
                    context += fed
            print(f"  step {trainer.state.global_step + 1} episode: task {task_id} turns {len(outcomes)} "
                  f"outcomes {outcomes} reward {reward} first answer {ascii(answers[0][:30])}", flush=True)  # fmt: skip
            out["prompt_ids"].append(prompt_ids)
            out["completion_ids"].append(completion)
            out["env_mask"].append(mask)
            out["env_reward"].append(reward)
            out["outcome"].append(outcomes[-1])
            out["turns"].append(len(outcomes))
        # No sampling logprobs: like TRL's own transformers path, the trainer recomputes them.
        out["logprobs"] = None
        return out

    return rollout_func


def gym_reward(completions, env_reward, **kwargs) -> list[float]:
    """The reward TRL trains on: what the gym paid (rollout_func's extra fields arrive as kwargs)."""
    return list(env_reward)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="A served gym (harness serve); default: serve --gym here")
    parser.add_argument("--gym", default="math")
    parser.add_argument("--harness", default=str(REPO / ".venv" / "bin" / "harness"),
                        help="The heavygym CLI that serves the gym and builds the tiny model")  # fmt: skip
    parser.add_argument("--gym-workers", type=int, default=2)
    parser.add_argument("--model", help="A transformers model directory; default: harness tiny-model")
    parser.add_argument("--tasks", type=int, default=8, help="How many of the gym's tasks to train on")
    parser.add_argument("--max-steps", type=int, default=2)
    parser.add_argument("--output-dir", default=None)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="openenv-trl-") as workdir:
        train(args, Path(workdir))


def train(args: argparse.Namespace, workdir: Path) -> None:
    model_dir = args.model
    if model_dir is None:  # a tiny random-weight Qwen3, built in code: no download
        model_dir = str(workdir / "tiny-model")
        subprocess.run([args.harness, "tiny-model", model_dir], check=True, stdout=subprocess.DEVNULL)

    with served_gym(args.harness, args.gym, args.gym_workers) if args.url is None else nullcontext(args.url) as url:
        rows = gym_tasks(url, args.tasks)
        task_of_prompt = {row["prompt"][0]["content"]: row["task_id"] for row in rows}
        tokenizer = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
        config = GRPOConfig(
            output_dir=args.output_dir or str(workdir / "out"),
            max_steps=args.max_steps,
            per_device_train_batch_size=4,  # 4 episodes a step: 2 prompts x num_generations=2
            num_generations=2,
            max_completion_length=24,  # per turn: the tiny model never stops on its own
            learning_rate=1e-4,
            logging_steps=1,
            save_strategy="no",
            report_to="none",
            use_cpu=True,
            seed=0,
        )
        trainer = GRPOTrainer(
            model=model,
            processing_class=tokenizer,
            reward_funcs=[gym_reward],
            args=config,
            train_dataset=Dataset.from_list(rows),
            rollout_func=make_rollout_func(url, task_of_prompt),
        )
        started = time.monotonic()
        trainer.train()
        for entry in trainer.state.log_history:
            if "reward" in entry:
                print(f"step {entry['step']}: reward {entry['reward']} loss {entry.get('loss')} "
                      f"completion tokens {entry.get('completions/mean_length')}")  # fmt: skip
        print(f"trained {trainer.state.global_step} GRPO steps in {time.monotonic() - started:.1f}s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
