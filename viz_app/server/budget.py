"""Whether a computation may start: its cost (bert/costs.py) against the server's budgets (viz_app/server/settings.py).
No Streamlit here.

- Within the per-request budget, what is left of the visitor's hour and the memory one computation may hold
  (`settings.memory_budget`: the most it holds at once while it runs, `Cost.peak`, its result kept in the
  server's caches included): it starts.
- Above any of them, a student is told the numbers and what to lower, and nothing starts; the owner and the presenter
  (viz_app/server/access.py) are told the same and may confirm, and then it starts (their hour is not counted).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from bert.config import BertConfig
from bert.costs import Cost, megabytes
from viz_app.server.access import Role
from viz_app.server.settings import ServerSettings


class Verdict(enum.Enum):
    START = "start"
    CONFIRM = "confirm"  # the owner or the presenter: it starts once they confirm
    REFUSE = "refuse"  # a student: nothing starts


MB = 1_000_000  # the memory budget's unit (viz_app/server/settings.py: memory_budget)


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    work: float  # BERT-base token passes
    message: str = ""  # for CONFIRM and REFUSE: the numbers and what to lower


def decide(cost: Cost, config: BertConfig, role: Role, settings: ServerSettings, spent_this_hour: float = 0.0) -> Decision:
    """`spent_this_hour`: the visitor's computations that started in the last hour, in BERT-base token passes."""
    work = cost.work(config)
    left = max(settings.visitor_budget - spent_this_hour, 0.0)
    peak = cost.peak(config)
    memory = peak <= settings.memory_budget * MB
    if work <= settings.request_budget and work <= left and memory:
        return Decision(Verdict.START, work)
    over = (f"a computation may hold {settings.memory_budget:,} MB of the server's memory" if not memory
            else f"a computation may cost {settings.request_budget:,}" if work > settings.request_budget
            else f"a visitor's computations may cost {settings.visitor_budget:,} an hour, {left:,.0f} of which are left")
    held = "" if memory else f", holding up to {megabytes(peak)} MB while it runs"
    numbers = f"This needs {cost.describe()}: {work:,.0f} BERT-base token passes{held}; on this server {over}."
    lower = f" Lower {_listed(cost.lower)} to make it cheaper." if cost.lower else ""
    if role is Role.STUDENT:
        return Decision(Verdict.REFUSE, work, f"{numbers}{lower} Nothing was started; the teacher can raise the budget.")
    return Decision(Verdict.CONFIRM, work, f"{numbers}{lower} It will hold one of the server's cores until it ends.")


def _listed(settings: tuple[str, ...]) -> str:
    return settings[0] if len(settings) == 1 else ", ".join(settings[:-1]) + " or " + settings[-1]
