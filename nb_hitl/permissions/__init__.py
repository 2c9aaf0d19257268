"""Explore AgentScope's permission rules on the real ``PermissionEngine``.

Everything that *decides* is AgentScope's own ``PermissionEngine``.

* :mod:`.rules`: rules as data on the agent's live context (parse, label,
  add, remove, edit, mode, working directories, the page's view);
* :mod:`.rulefile`: export / import of rules files, all or nothing;
* :mod:`.tools`: the agent's tools and their inputs;
* :mod:`.engine`: :func:`try_call`, :func:`mode_matrix`, traced in order;
* :mod:`.explain`: why a rule matches, in words; checking an edited rule
  (:func:`validate_rule_edit`); :mod:`.reach`: what else a rule lets through
  (:func:`rule_reach`), checked on AgentScope's matcher;
* :mod:`.names`: refusing look-alike, invisible and bidi characters;
* :mod:`.shell`: a shell command line read into its simple commands
  (:func:`parse_command`), and :mod:`.shell_check`: each judged by the engine
  (:func:`judge_shell_call`), for the shell rules (:mod:`nb_hitl.shell_policy`).

:func:`explore` builds the widget, imported lazily: the widget imports this
package, never the reverse.
"""

from __future__ import annotations

from typing import Any

from .._agentscope import permission_context, permission_engine
from .engine import mode_matrix, try_call
from .explain import explain_match, validate_rule_edit
from .reach import rule_reach
from .rulefile import RuleFileError, export_rules, import_rules
from .rules import (
    MODES,
    RULE_BEHAVIORS,
    add_rule,
    add_working_directory,
    describe_context,
    edit_rule,
    parse_rule,
    remove_rule,
    remove_working_directory,
    rule_label,
    rule_to_dict,
    set_mode,
)
from .shell import parse_command
from .shell_check import decide_as_session, judge_shell_call
from .tools import get_tool, list_tools, parse_input

__all__ = [
    "MODES",
    "RULE_BEHAVIORS",
    "RuleFileError",
    "context_of",
    "engine_of",
    "describe_context",
    "parse_rule",
    "parse_input",
    "rule_to_dict",
    "rule_label",
    "add_rule",
    "remove_rule",
    "edit_rule",
    "set_mode",
    "add_working_directory",
    "remove_working_directory",
    "list_tools",
    "get_tool",
    "try_call",
    "mode_matrix",
    "explain_match",
    "rule_reach",
    "validate_rule_edit",
    "export_rules",
    "import_rules",
    "explore",
    "parse_command",
    "judge_shell_call",
    "decide_as_session",
]

engine_of = permission_engine
"""Alias of :func:`nb_hitl._agentscope.permission_engine`: the
``PermissionEngine`` that decides for an agent (``agent._engine``), engine
or context. Raises ``TypeError`` for anything else."""

context_of = permission_context
"""Alias of :func:`nb_hitl._agentscope.permission_context`: the
``PermissionContext`` the agent's next permission check reads
(``agent._engine.context``, not ``agent.state.permission_context``)."""


def explore(agent: Any, **kwargs: Any) -> Any:
    """Show a :class:`nb_hitl.widgets.permissions.PermissionExplorer` for
    ``agent`` (the widget module is imported here, lazily).

    Args:
        agent: an ``agentscope.agent.Agent``.
        **kwargs: the explorer's keyword options (``watch``, ``watch_interval``).

    Returns:
        PermissionExplorer: the widget (display it as a cell's last value).

    Raises:
        TypeError: for an object without a permission engine.
    """
    from ..widgets.permissions import PermissionExplorer

    return PermissionExplorer(agent, **kwargs)
