"""Pauses that MCP servers raise: an elicitation answered by a person on a card,
and a sampling request the person reviews before and after the notebook's model answers.

:class:`AskingMCPClient` is AgentScope's ``MCPClient`` with the MCP SDK's
elicitation and sampling callbacks, in both of the SDK's protocol modes. When a server asks
while its tool runs under a :class:`~nb_hitl.session.Session`, the person
sees a card of kind ``elicitation`` (:mod:`nb_hitl.kinds.elicitation`) with
the server's message and its schema as a form (or, in URL mode, the page it
sends the person to), and answers accept (Done), decline or cancel; the answer takes the front door like every other, then goes back
to the server (the agent is not resumed: it awaits the tool's result). What
the model reads is the tool's own result. A sampling request shows as two
cards of kind ``sampling`` (:mod:`nb_hitl.kinds.sampling`): the request
(approve, edit the messages, deny) before the agent's own model is called,
then the completion (approve, edit, deny) before it goes back to the server;
a denial is an MCP error to the server. Design notes: ``docs/design.md``,
"MCP elicitation".
"""

from __future__ import annotations

from ._ask import ELICITATION_SEP, Carrier, ask_person
from ._client import AskingMCPClient
from ._sampling import SAMPLING_SEP

__all__ = ["AskingMCPClient", "ask_person", "Carrier", "ELICITATION_SEP", "SAMPLING_SEP"]
