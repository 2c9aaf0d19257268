"""The decisions of an audit log, charted: what happened to each call, and how long people took.

Two pure functions turn :func:`~nb_hitl.audit.frame.audit_frame`'s frame into
small tables; two more draw them with matplotlib (the ``charts`` extra:
``pip install nb_hitl[charts]``), imported only when a chart is drawn.

* :func:`call_outcomes`: one row per tool call, its outcome (``allowed``,
  ``denied``, ``approved``, ``denied by person``...) and when it was settled;
* :func:`decide_times`: one row per answered pause, the seconds between the
  pause opening and the answer;
* :func:`plot_outcomes`: each call on its tool's row over time, marked by its outcome;
* :func:`plot_decide_times`: the time to decide per answered call, with a
  line at :data:`QUICK_SECONDS`: the approvals left of it were given in under
  a second (:func:`nb_hitl.audit.views.quick_approvals`).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..answers.record import NOT_ANSWERS
from .calls import read_calls
from .frame import frame_records, when

__all__ = ["QUICK_SECONDS", "OUTCOME_COLUMNS", "call_outcomes", "decide_times", "plot_outcomes", "plot_decide_times"]

QUICK_SECONDS = 1.0
"""An approval given in less than this many seconds from the pause opening is "quick" (rubber-stamping)."""

OUTCOME_COLUMNS = ["time", "agent", "tool_call_id", "tool_name", "checked", "decided_how", "rule", "person", "outcome"]
"""The columns of :func:`call_outcomes`."""

_ANSWER_WORDS = {"approve": "approved", "deny": "denied by person", "modify": "approved with changes"}


def _outcome(checked: Any, person: Any) -> str:
    """A call's outcome: the person's answer when it asked, else the check's decision."""
    if isinstance(person, str) and person:
        return _ANSWER_WORDS.get(person, person)
    if checked == "allow":
        return "allowed"
    if checked == "deny":
        return "denied"
    return "unanswered"


def call_outcomes(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per tool call of an audit frame, oldest first.

    Args:
        frame: :func:`~nb_hitl.audit.frame.audit_frame` of a log (records
            with ``event`` ``checked`` and ``answered``).

    Returns:
        a ``DataFrame`` with :data:`OUTCOME_COLUMNS`, the calls
        :func:`~nb_hitl.audit.calls.read_calls` reads: ``time`` (UTC
        ``Timestamp``: the answer's when a person answered, else the
        check's), ``checked`` (the decision of the call's check that counted:
        ``allow`` | ``deny`` | ``ask``; ``ask`` for a call with only an
        answer), ``decided_how`` and ``rule`` (what decided it), ``person``
        (the first answer, or ``None``) and ``outcome``: ``allowed`` /
        ``denied`` (by the check), ``approved`` / ``denied by person`` /
        ``approved with changes``, the answer's own word for any other
        answer (``timeout``, ``answer``...), or ``unanswered`` (asked, no
        answer on the record: a pause closed by an interrupt is one).
    """
    calls = read_calls(frame_records(frame)).columns
    out = pd.DataFrame(
        {
            "time": [when(ts) for ts in calls["ts"]],
            "agent": calls["agent"],
            "tool_call_id": calls["tool_call_id"],
            "tool_name": calls["tool_name"],
            "checked": calls["recorded"],
            "decided_how": calls["recorded_how"],
            "rule": [r if isinstance(r, str) else None for r in calls["recorded_rule"]],
            "person": calls["person"],
        },
        columns=OUTCOME_COLUMNS,
    )
    for col in ("decided_how", "rule", "person"):  # missing is None, not NaN
        out[col] = out[col].astype(object).where(out[col].notna(), None)
    out["outcome"] = [_outcome(c, p) for c, p in zip(out["checked"], out["person"], strict=True)]
    return out.sort_values("time", kind="stable").reset_index(drop=True)


def decide_times(frame: pd.DataFrame) -> pd.DataFrame:
    """How long each answered pause waited for its answer.

    Args:
        frame: :func:`~nb_hitl.audit.frame.audit_frame` of a log.

    Returns:
        a ``DataFrame`` with columns ``tool_call_id``, ``tool_name``,
        ``decision`` (the answer), ``decided_by``, ``answered_at`` (UTC
        ``Timestamp``) and ``seconds`` (float: ``answered_at`` less
        ``opened_at``), one row per answer that has both times, oldest first
        (nb_hitl's own lines about a call, :data:`~nb_hitl.answers.record.NOT_ANSWERS`,
        are nobody's answer and are left out).
    """
    answered = frame[
        (frame["event"] == "answered")
        & ~frame["decision"].isin(NOT_ANSWERS)  # nb_hitl's own lines about a call: nobody decided
        & frame["opened_at"].notna()
        & frame["answered_at"].notna()
    ]
    out = answered[["tool_call_id", "tool_name", "decision", "decided_by", "answered_at"]].copy()
    out["seconds"] = (answered["answered_at"] - answered["opened_at"]).dt.total_seconds()
    return out.reset_index(drop=True)


def _axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - the charts extra is missing
        raise ImportError("nb_hitl's charts need matplotlib: pip install 'nb_hitl[charts]'") from exc
    return plt.subplots(figsize=(8, 3.5))[1]


_STYLE = {  # outcome -> (marker, colour)
    "allowed": ("o", "tab:blue"),
    "approved": ("^", "tab:green"),
    "approved with changes": ("^", "tab:olive"),
    "denied": ("x", "tab:purple"),
    "denied by person": ("v", "tab:red"),
}


def plot_outcomes(outcomes: pd.DataFrame, ax: Any = None) -> Any:
    """Draw every call as a mark on its tool's row, over time: the marker and
    colour say its outcome (allowed, approved, denied by person...).

    Args:
        outcomes: :func:`call_outcomes`'s frame.
        ax: a matplotlib ``Axes`` to draw on; a new figure's when omitted.

    Returns:
        the ``Axes``: x is seconds since the first call, one row per tool
        (alphabetical, top to bottom), one legend entry per outcome.

    Raises:
        ImportError: matplotlib is not installed (the ``charts`` extra).
    """
    ax = _axes(ax)
    tools = sorted(outcomes["tool_name"].unique())
    row = {tool: i for i, tool in enumerate(tools)}
    start = outcomes["time"].min()
    for outcome, group in outcomes.groupby("outcome", sort=True):
        marker, colour = _STYLE.get(str(outcome), ("s", "tab:gray"))
        seconds = (group["time"] - start).dt.total_seconds()
        ax.scatter(seconds, group["tool_name"].map(row), marker=marker, color=colour, s=60, label=str(outcome))
    ax.set_yticks(range(len(tools)), tools)
    ax.set_ylim(len(tools) - 0.5, -0.5)
    ax.set_xlabel("seconds since the first call")
    ax.set_title("Each tool call and what happened to it")
    if len(outcomes):
        ax.legend(fontsize="small", loc="best")
    return ax


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``... ``11th``, ``21st`` (English ordinal of ``n >= 1``)."""
    teen = 10 <= n % 100 <= 20
    return f"{n}{'th' if teen else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def call_labels(tool_names: list[str]) -> list[str]:
    """A label a person reads for each call, in order: the tool and, when the tool was called more than once,
    its position among that tool's calls (``["lookup", "send_mail, 1st call", "send_mail, 2nd call"]``);
    never the call's id. Labels are unique, so a categorical axis keeps one bar per call."""
    total = {t: tool_names.count(t) for t in tool_names}
    seen: dict[str, int] = {}
    out = []
    for t in tool_names:
        seen[t] = seen.get(t, 0) + 1
        out.append(t if total[t] == 1 else f"{t}, {ordinal(seen[t])} call")
    return out


def plot_decide_times(times: pd.DataFrame, ax: Any = None, quick: float | None = QUICK_SECONDS) -> Any:
    """Draw the seconds each answered pause waited, one bar per answer, coloured by the answer.

    Args:
        times: :func:`decide_times`'s frame.
        ax: a matplotlib ``Axes`` to draw on; a new figure's when omitted.
        quick: draw a dashed line at this many seconds, labelled with the
            number of approvals given in less (``None``: no line).

    Returns:
        the ``Axes`` (bars labelled by :func:`call_labels`: ``send_mail, 2nd call``).

    Raises:
        ImportError: matplotlib is not installed (the ``charts`` extra).
    """
    ax = _axes(ax)
    colours = {"approve": "tab:green", "deny": "tab:red"}
    labels = call_labels(list(times["tool_name"]))
    ax.barh(labels, times["seconds"], color=[colours.get(d, "tab:gray") for d in times["decision"]])
    ax.invert_yaxis()  # oldest on top
    ax.set_xlabel("seconds to decide")
    ax.set_title("Time to decide (green: approved, red: denied)")
    if quick is not None:
        fast = int(((times["decision"] == "approve") & (times["seconds"] < quick)).sum())
        ax.axvline(quick, color="tab:orange", linestyle="--", label=f"{fast} approval(s) in under {quick:g} s")
        ax.legend(fontsize="small", loc="best")
    return ax
