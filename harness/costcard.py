"""Cost cards: what one gym step costs, as the simulator and the planner need it.

A card holds the service-time distribution of one gym step (equally likely values), the turns an
episode takes, the tokens a turn's feedback adds to the next prompt, timeout and error rates, CPU
seconds and peak memory per call, and the gym's tool versions. Cards come from two places:

* `harness.gymcost.measure` (`harness gyms profile NAME`): every replay candidate of each
  task through a GymPool, weighted to the replay policy's action mix.
* `from_run`: a benchmark run's own gym_step spans (`harness benchmark` writes card.json;
  older runs are derived on demand), each task's step time from the spans of its groups
  (trajectories.csv names each group's task).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gyms import Gym, make
from gyms.registry import UnknownGymError, registered
from harness.outputs import gym_file_name, lookup_roots, naming, without_paths, write_text
from harness.rundir import Run, load_run, load_summary, trajectory_rows
from harness.summary import RunSummary
from harness.sim.distribution import Distribution
from trainer.timeline import Span
from trainer.types import DROPPED_STALE, TRAINED

CARDS = Path("cards")  # under the results root: where `harness gyms profile` writes by default


@dataclass(frozen=True)
class CostCard:
    gym: str
    source: str  # "gyms profile" (measured by harness gyms profile; "profile" in cards written before) or "run RUN-ID"
    tools: dict[str, str]
    service_s: Distribution  # one gym step, under the replay policy's action mix
    turns: tuple[float, ...]  # turns[i]: probability that an episode takes i + 1 turns
    error_rate: float  # per call
    timeout_rate: float | None  # per call; None where the source cannot tell (a run's spans)
    workers: int  # gym pool size during the measurement
    calls: int
    cpu_s_per_call: float | None = None  # profile only: gym processes and their sandboxes
    peak_rss_mb: float | None = None  # profile only: the largest gym process (an upper bound)
    by_expect: dict[str, Distribution] = field(default_factory=dict)  # profile only: pass/fail/timeout
    # A worker's first calls also start its checker (seconds, for Lean): paid once per worker,
    # so warm-up calls are kept out of service_s, which the simulator draws every call from.
    warmup_max_s: float | None = None
    # The mean estimated tokens (trainer/rules/context.py) of the feedback on a turn after which the
    # episode goes on: what each turn adds to the next prompt beside its response. A card written
    # before this field, or one from a run recorded before its gym_step spans carried the estimate,
    # reads 0: its prompts grow by the responses alone, short by the feedback (docs/simulate.md).
    feedback_tokens: float = 0.0
    # By task id, the mean service seconds of one step of the task: from a profile, weighted to the
    # replay mix as service_s is; from a run, its steps of that task (`from_run`). A card written
    # before this field, or from a run recorded before trajectories.csv, has none ({}).
    by_task: dict[str, float] = field(default_factory=dict)
    # By task id, the turns its episodes took, as `turns` (from a run's trajectories.csv: a task's
    # answers, and so its turns, are its own). A task without them takes the card's `turns`; a profile
    # runs answers, not episodes, and has none.
    turns_by_task: dict[str, tuple[float, ...]] = field(default_factory=dict)
    # The gym's options when it was measured (`-o KEY=VALUE`: a heavy suite costs what a core one does
    # not), so that a card is used only for the gym it measured. None: a card written before this field.
    gym_options: dict[str, str] | None = None

    @property
    def mean_turns(self) -> float:
        return _mean_of(self.turns)

    def task_turns(self, task: str) -> tuple[float, ...]:
        return self.turns_by_task.get(task, self.turns)

    def task_costs(self) -> dict[str, float]:
        """Each task's predicted gym seconds per trajectory: its mean step times its mean turns
        (the prior of trainer/rules/cost.py); empty where the card has no per-task figures."""
        return {task: step_s * _mean_of(self.task_turns(task)) for task, step_s in self.by_task.items()}

    def to_json(self) -> dict[str, Any]:
        return {
            "gym": self.gym, "source": self.source, "tools": self.tools, "service_s": self.service_s.to_json(),
            "turns": list(self.turns), "mean_turns": self.mean_turns, "error_rate": self.error_rate,
            "timeout_rate": self.timeout_rate, "workers": self.workers, "calls": self.calls,
            "cpu_s_per_call": self.cpu_s_per_call, "peak_rss_mb": self.peak_rss_mb,
            "by_expect": {k: d.to_json() for k, d in self.by_expect.items()}, "warmup_max_s": self.warmup_max_s,
            "feedback_tokens": self.feedback_tokens, "by_task": self.by_task,
            "turns_by_task": {task: list(pmf) for task, pmf in self.turns_by_task.items()},
            **({} if self.gym_options is None else {"gym_options": self.gym_options}),
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CostCard:
        turns = _pmf(data["turns"])
        return cls(
            gym=str(data["gym"]), source=str(data["source"]), tools=dict(data["tools"]),
            service_s=Distribution.from_json(data["service_s"]), turns=turns,
            error_rate=float(data["error_rate"]), timeout_rate=data["timeout_rate"], workers=int(data["workers"]),
            calls=int(data["calls"]), cpu_s_per_call=data.get("cpu_s_per_call"),
            peak_rss_mb=data.get("peak_rss_mb"),
            by_expect={k: Distribution.from_json(d) for k, d in data.get("by_expect", {}).items()},
            warmup_max_s=data.get("warmup_max_s"), feedback_tokens=float(data.get("feedback_tokens", 0.0)),
            by_task={str(k): float(v) for k, v in data.get("by_task", {}).items()},
            turns_by_task={str(k): _pmf(v) for k, v in data.get("turns_by_task", {}).items()},
            gym_options=None if data.get("gym_options") is None else
            {str(k): str(v) for k, v in data["gym_options"].items()},
        )  # fmt: skip


def _pmf(values: Any) -> tuple[float, ...]:
    pmf = tuple(float(p) for p in values)
    if not pmf or abs(sum(pmf) - 1) > 1e-6 or min(pmf) < 0:
        raise ValueError("turns must be probabilities that sum to 1")
    return pmf


def _mean_of(pmf: tuple[float, ...]) -> float:
    """The mean turns of a turns pmf (pmf[i]: the chance of i + 1 turns)."""
    return sum((i + 1) * p for i, p in enumerate(pmf))


def save(card: CostCard, path: Path) -> None:
    with naming(path.parent):
        path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps(without_paths(card.to_json()), indent=2, sort_keys=True) + "\n")


def load(path: Path) -> CostCard:
    try:
        return CostCard.from_json(json.loads(path.read_text()))
    except FileNotFoundError:
        raise ValueError(f"no cost card at {path}: write one with `harness gyms profile GYM --out {path}`") from None
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path} is not a cost card ({type(exc).__name__}: {exc})") from None


# -- episode turns ---------------------------------------------------------------------------


def turn_pmf(end_chance: float, max_turns: int) -> tuple[float, ...]:
    """Turns of an episode that ends at each turn with `end_chance` (a pass), else at max_turns."""
    pmf = [(1 - end_chance) ** t * end_chance for t in range(max_turns - 1)]
    return (*pmf, (1 - end_chance) ** (max_turns - 1))


def fit_turns(mean: float, max_turns: int) -> tuple[float, ...]:
    """The turn_pmf with this mean (bisection: the mean falls as the end chance rises)."""
    mean = min(max(mean, 1.0), float(max_turns))
    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        if sum((t + 1) * p for t, p in enumerate(turn_pmf(mid, max_turns))) > mean:
            low = mid
        else:
            high = mid
    return turn_pmf((low + high) / 2, max_turns)


# -- cards from runs -------------------------------------------------------------------------


def from_run(run: Run, gym: Gym | None = None) -> CostCard:
    """A card from a run's gym_step spans, every mode together, the warm-up step's apart.
    The spans say how long a step took, not why, so the timeout rate is unknown. Turns: the
    mean is measured (gym steps per trajectory that ran); the shape is the turn_pmf with the
    gym's max_turns. Feedback tokens: the mean of those the spans of steps whose episode went
    on carry (0 where none do: a single-turn run, or one recorded before the spans had them).
    Per task: the mean of the same spans by the task of their group (`by_task`), and the turns its
    trajectories took (`turns_by_task`, from trajectories.csv)."""
    warmup, rest = _warmup_calls(run)
    spans = warmup + rest
    if not rest:
        raise ValueError(f"run {run.run_id} has too few gym_step spans to build a cost card from")
    accounts = [m.accounting for m in run.summary.modes.values()]
    ran = sum(a["generated"] - a["abandoned"] for a in accounts)
    gym = gym or _gym_of(run)
    mean_turns = len(spans) / max(ran, 1)
    max_turns = gym.max_turns if gym is not None else max(1, round(mean_turns + 0.5))
    return CostCard(
        gym=run.summary.gym, source=f"run {run.run_id}", tools=dict(run.summary.tools),
        service_s=Distribution.of([s.duration for s in rest]), turns=fit_turns(mean_turns, max_turns),
        error_rate=sum(a["errored"] for a in accounts) / len(spans), timeout_rate=None,
        workers=int(run.summary.gym_workers or 1), calls=len(spans),
        warmup_max_s=max((s.duration for s in warmup), default=None),
        feedback_tokens=_mean([s.feedback_tokens for s in spans if s.feedback_tokens is not None]),
        by_task=_by_task(run), turns_by_task=_turns_by_task(run.path), gym_options=_options_of(run.summary),
    )  # fmt: skip


def _options_of(summary: RunSummary) -> dict[str, str]:
    return {str(k): str(v) for k, v in (summary.spec.get("gym_options") or {}).items()}


def _mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else 0.0


def _warmup_calls(run: Run) -> tuple[list[Span], list[Span]]:
    """The gym_step spans that start in the first mode's warm-up step (the modes share one pool,
    which starts its checkers then), and the rest."""
    warmup, rest = [], []
    for _, span, warming in _gym_steps(run):
        (warmup if warming else rest).append(span)
    return warmup, rest


def _gym_steps(run: Run) -> Iterator[tuple[str, Span, bool]]:
    """Each gym_step span with its mode, and whether it starts in the first mode's warm-up step."""
    first_mode = run.modes[0]
    warm_from = run.steps[first_mode][0].end
    for mode in run.modes:
        for span in (s for s in run.spans[mode] if s.kind == "gym_step"):
            yield mode, span, mode == first_mode and span.start < warm_from


def _by_task(run: Run) -> dict[str, float]:
    """Each task's mean step seconds in the run: its trajectories' gym time over their turns, from
    the gym_step spans outside the warm-up step (as service_s), each matched to its task through
    trajectories.csv (a row per trajectory: its mode, group and task). {} for a run recorded
    before trajectories.csv, or before the spans named their group."""
    task_of = {(row["mode"], int(row["group"])): row["task_id"] for row in trajectory_rows(run.path)}
    seconds: dict[str, list[float]] = {}
    for mode, span, warming in _gym_steps(run):
        if not warming and (task := task_of.get((mode, span.group))) is not None:
            seconds.setdefault(task, []).append(span.duration)
    return {task: sum(s) / len(s) for task, s in sorted(seconds.items())}


def _turns_by_task(run_dir: Path) -> dict[str, tuple[float, ...]]:
    """Each task's turns pmf over the trajectories of the run's first repeat that ended and were
    judged (trained or dropped stale; not in flight at the end, nor ended by an infrastructure error)."""
    counts: dict[str, list[int]] = {}
    for row in trajectory_rows(run_dir):
        if row["fate"] in (TRAINED, DROPPED_STALE) and int(row["turns"]) > 0:
            turns = counts.setdefault(row["task_id"], [])
            turns += [0] * (int(row["turns"]) - len(turns))
            turns[int(row["turns"]) - 1] += 1
    return {task: tuple(n / sum(turns) for n in turns) for task, turns in sorted(counts.items())}


def task_order(run_dir: Path) -> tuple[str, ...]:
    """The order the run's task sampler drew its tasks in, each task once: the tasks of its groups
    in the order they started (group numbers count draws), in the mode of its first repeat that drew
    the most (every mode draws the same sequence; cost-aware reorders each block by what the mode has
    learned). () for a run recorded before trajectories.csv."""
    groups: dict[str, dict[int, str]] = {}
    for row in trajectory_rows(run_dir):
        groups.setdefault(row["mode"], {})[int(row["group"])] = row["task_id"]
    longest = max(groups.values(), key=len, default={})  # ties: the first recorded
    drawn = sorted(longest.items())
    return tuple(dict.fromkeys(task for _, task in drawn))


def _gym_of(run: Run) -> Gym | None:
    """The run's gym with its options, for max_turns; None where it is not installed here."""
    try:
        return make(run.summary.gym, **run.summary.spec.get("gym_options", {}))
    except Exception:  # an uninstalled or broken gym: fall back to the measured mean alone
        return None


def write_run_card(run_dir: Path, gym: Gym) -> None:
    """card.json beside a finished run's records; none for a run whose gym steps all fell in
    the warm-up step (a tiny run of one-turn episodes): it measured no cost to write down."""
    run = load_run(run_dir)
    if _warmup_calls(run)[1]:
        save(from_run(run, gym), run_dir / "card.json")


def run_card(run_dir: Path, run: Run | None = None) -> CostCard:
    """A run's card.json, or one derived from its spans (runs from before card.json). A card.json
    written before per-task figures gets them from the run's records where it has them. `run`:
    the run, where the caller has loaded it already (loading reads every span)."""
    file = run_dir / "card.json"
    if not file.is_file():
        return from_run(run or load_run(run_dir))
    card = load(file)
    if card.gym_options is None:  # a card.json from before the field: the run says what its gym was
        card = replace(card, gym_options=_options_of(run.summary if run else load_summary(run_dir)))
    if not card.by_task and (run_dir / "trajectories.csv").is_file():
        card = replace(card, by_task=_by_task(run or load_run(run_dir)))
    if card.by_task and not card.turns_by_task:
        card = replace(card, turns_by_task=_turns_by_task(run_dir))
    return card


def options_text(options: dict[str, str] | None) -> str:
    """A card's gym options in words."""
    if options is None:
        return "options not recorded"
    return ", ".join(f"{k}={v}" for k, v in sorted(options.items())) or "no options"


def profile_path(results_root: Path, gym: str, options: dict[str, str]) -> Path:
    """Where `harness gyms profile` writes a gym's card by default: one file per gym and options."""
    return results_root / CARDS / gym_file_name(gym, options)


def find_card(gym: str, results_root: Path, card: Path | None = None,
              options: dict[str, str] | None = None) -> tuple[CostCard, str, Path | None]:  # fmt: skip
    """The card the planner and the simulator use, where it came from, and the run behind it (None
    for a profiled card): --card if given (a card.json, or a run's directory); else, in RESULTS and
    then in the published results, a card of this gym measured with exactly these gym `options`:
    ROOT/cards/*.json (`harness gyms profile` writes them), else the newest such run under ROOT/runs/
    (its card.json, or one derived from its spans). Never a card of other options: a core suite's
    card would answer for a heavy one. None found: one error line naming the cards there are."""
    if card is not None:
        run_dir = card if card.is_dir() else card.parent if card.name == "card.json" else None
        if run_dir is not None and (run_dir / "summary.json").is_file():
            return run_card(run_dir), f"run {run_dir.name} ({card})", run_dir
        return load(card), str(card), None
    wanted = dict(options or {})
    others: list[str] = []
    for root in lookup_roots(results_root):
        cards = root / CARDS
        for path in sorted(cards.glob("*.json")) if cards.is_dir() else []:
            try:
                found = load(path)
            except ValueError:
                continue  # not a card: the leaderboard and `harness gyms profile` say so
            if found.gym != gym:
                continue
            if (found.gym_options or {}) == wanted:
                return found, str(path), None
            others.append(f"{path} ({options_text(found.gym_options)})")
        runs = root / "runs"
        for run_dir in sorted((p for p in runs.iterdir() if p.is_dir()), reverse=True) if runs.is_dir() else []:
            try:
                summary = load_summary(run_dir)
            except ValueError:
                continue  # a broken run is skipped here; the leaderboard reports it
            if summary.gym != gym:
                continue
            if _options_of(summary) == wanted:
                stored = (run_dir / "card.json").is_file()
                where = f"run {run_dir.name} ({run_dir}, {'card.json' if stored else 'derived from its spans'})"
                return run_card(run_dir), where, run_dir
            others.append(f"run {run_dir.name} ({options_text(_options_of(summary))})")
    if gym not in registered():
        raise UnknownGymError(gym, list(registered()))
    where = " or ".join(str(root) for root in lookup_roots(results_root))
    found_text = (f"found only other options: {'; '.join(dict.fromkeys(others[:6]))}"
                  + (f" and {len(others) - 6} more" if len(others) > 6 else "")) if others else "found none"  # fmt: skip
    flag = " ".join(f"-o {k}={v}" for k, v in sorted(wanted.items()))
    raise ValueError(
        f"no cost card for gym {gym!r} with {options_text(wanted)} under {where} ({found_text}): run "
        f"`harness gyms profile {gym}{' ' + flag if flag else ''}` or `harness benchmark --gym {gym}"
        f"{' ' + flag if flag else ''}`, give the options of a card found (-o KEY=VALUE), or pass --card PATH"
    )


def describe(card: CostCard) -> list[str]:
    """The card in a few lines, for the terminal."""
    s = card.service_s

    def maybe(value: float | None, fmt: str) -> str:
        return "unknown" if value is None else format(value, fmt)

    return [
        f"{card.gym} cost card ({card.source}, {card.calls} calls on {card.workers} workers): "
        + ", ".join(f"{k}={v}" for k, v in card.tools.items()),
        f"service time per step (replay mix): mean {s.mean:.3f} s, p50 {s.p50:.3f}, p95 {s.p95:.3f}, "
        f"p99 {s.p99:.3f}, max {s.max:.3f}",
        *(f"  {kind} candidates: mean {d.mean:.3f} s, p95 {d.p95:.3f}, max {d.max:.3f} ({d.count} calls)"
          for kind, d in card.by_expect.items()),  # fmt: skip
        f"turns per episode: mean {card.mean_turns:.2f} ({', '.join(f'{p:.2f}' for p in card.turns)} for 1, 2, ...); "
        f"feedback adds {card.feedback_tokens:.0f} tokens (estimated) to the next turn's prompt",
        *([f"per task: mean step {min(card.by_task.values()):.3f} s to {max(card.by_task.values()):.3f} s "
           f"over {len(card.by_task)} tasks"] if card.by_task else []),
        f"timeout rate {maybe(card.timeout_rate, '.1%')}, error rate {card.error_rate:.1%}, CPU "
        f"{maybe(card.cpu_s_per_call, '.3f')} s per call, peak memory {maybe(card.peak_rss_mb, '.0f')} MB, "
        f"longest warm-up call {maybe(card.warmup_max_s, '.2f')} s (checkers starting)",
    ]
