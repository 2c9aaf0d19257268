"""One module per pause kind, behind a small registry.

A pause (:class:`~nb_hitl.pauses.Pause`) has a kind: ``confirm``,
``ask_user``, ``external``, ``review``, ``form``, ``elicitation`` or ``sampling``. Everything that varies
by kind (completing a built pause, page message -> AgentScope object, the
deadline / cancel default, the AG-UI interrupt mapping) lives in that
kind's :class:`PauseKindSpec`; generic code asks :func:`kind_spec` and never
branches on the kind. Tools that shape their own pause implement
:class:`PauseShaper` against a :class:`PauseHost`.
"""

from __future__ import annotations

from ._base import Decision, PauseHost, PauseKindSpec, PauseShaper
from .ask_user import AskUserKind
from .confirm import ConfirmKind
from .elicitation import ElicitationKind
from .external import ExternalKind
from .form import FormKind, FormTool
from .review import ReviewKind
from .review_tool import ReviewedTool, reviewed
from .sampling import SamplingKind

__all__ = [
    "KINDS",
    "kind_spec",
    "Decision",
    "PauseHost",
    "PauseKindSpec",
    "PauseShaper",
    "FormTool",
    "ReviewedTool",
    "reviewed",
]

_REGISTRY: dict[str, PauseKindSpec] = {
    spec.name: spec
    for spec in (
        ConfirmKind(),
        AskUserKind(),
        ExternalKind(),
        FormKind(),
        ReviewKind(),
        ElicitationKind(),
        SamplingKind(),
    )
}

KINDS: tuple[str, ...] = tuple(_REGISTRY)
"""The pause kinds, in the order AG-UI metadata lists them:
``("confirm", "ask_user", "external", "form", "review", "elicitation", "sampling")``."""


def kind_spec(name: str) -> PauseKindSpec:
    """The spec of pause kind ``name`` (``Pause.kind``).

    Raises:
        KeyError: ``name`` is not a pause kind (see :data:`KINDS`).
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown pause kind {name!r}; expected one of {', '.join(KINDS)}") from None
