"""A gym's hackability figure: its declared attack suites (gyms/attacks.py) run at a commit.

`harness gyms attack GYM --results ROOT` writes ROOT/attacks/GYM[-KEY=VALUE...].json: the gym, its
options, the commit and whether the tree was clean, and per suite the attacks tried, escapes,
errors and defects (with each non-contained attack's label and detail). The leaderboard shows
one row per record from a clean tree (`harness leaderboard`), so a figure always names the code
that earned it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gyms.attacks import CONTAINED, DEFECT, ERROR, ESCAPE, SuiteReport
from harness.outputs import gym_file_name, naming, write_text

ATTACKS = Path("attacks")  # under the results root


@dataclass(frozen=True)
class Hackability:
    gym: str
    options: dict[str, str]
    git: dict[str, Any]  # commit and dirty, as a run records them
    tried: int
    escapes: int
    errors: int
    defects: int
    suites: list[dict[str, Any]]  # per suite: its counts, the findings that were not contained, its controls

    @property
    def held(self) -> bool:
        """Every attack contained, and every control intact after them."""
        return not (self.escapes or self.errors or self.defects or any(s["controls_broken"] for s in self.suites))

    @property
    def clean(self) -> bool:
        return bool(self.git.get("commit")) and self.git.get("dirty") is False

    def line(self) -> str:
        return (f"{self.gym}: {self.tried} attacks tried, {self.escapes} escapes, {self.errors} errors, "
                f"{self.defects} defects")  # fmt: skip


def of(gym: str, options: dict[str, str], git: dict[str, Any], reports: list[SuiteReport]) -> Hackability:
    suites = [{
        "suite": r.suite, "tried": len(r.findings), **{v: r.count(v) for v in (ESCAPE, ERROR, DEFECT)},
        "findings": [asdict(f) for f in r.findings if f.verdict != CONTAINED], "controls_broken": list(r.controls),
    } for r in reports]  # fmt: skip
    total = {key: sum(s[key] for s in suites) for key in ("tried", ESCAPE, ERROR, DEFECT)}
    return Hackability(gym, options, git, total["tried"], total[ESCAPE], total[ERROR], total[DEFECT], suites)


def path_of(root: Path, h: Hackability) -> Path:
    return root / ATTACKS / gym_file_name(h.gym, h.options)


def save(root: Path, h: Hackability) -> Path:
    path = path_of(root, h)
    with naming(path.parent):
        path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps(asdict(h), indent=2, sort_keys=True) + "\n")
    return path


def load_all(root: Path) -> tuple[list[Hackability], list[str]]:
    """The records under ROOT/attacks/, by gym, and a warning for each file that is not one."""
    found, warnings = [], []
    folder = root / ATTACKS
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            found.append(Hackability(**json.loads(path.read_text())))
        except (OSError, ValueError, TypeError) as exc:
            warnings.append(f"skipped {path}: not a hackability record ({type(exc).__name__}: {exc})")
    return sorted(found, key=lambda h: (h.gym, sorted(h.options.items()))), warnings


HEADERS = ["gym", "options", "attacks tried", "escapes", "errors", "defects", "commit"]
INTRO = ("Each gym's declared attack suites (reward hacks that must fail: `harness gyms attack GYM`), run "
         "through a real gym pool: escapes passed, errors ended as infrastructure errors, defects failed "
         "without clean feedback or in time. Measured at the commit shown, from a clean tree.")


def rows(records: list[Hackability]) -> list[list[str]]:
    return [[h.gym, ", ".join(f"{k}={v}" for k, v in sorted(h.options.items())) or "-", str(h.tried),
             str(h.escapes), str(h.errors), str(h.defects), str(h.git.get("commit") or "")[:7]]
            for h in records if h.clean]  # fmt: skip
