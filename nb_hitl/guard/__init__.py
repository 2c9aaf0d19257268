"""Guards for untrusted input: what someone else wrote, checked before use.

* :mod:`~nb_hitl.guard.schema`: a JSON Schema the model or a peer wrote
  (an ``AskForm`` call, an AG-UI interrupt, a tool's input schema):
  :func:`check_schema` refuses what cannot be used safely; a schema whose
  references expand past :data:`MAX_SCHEMA_EXPANDED` parts is refused
  (validation walks the expansion).
* :mod:`~nb_hitl.guard.validate`: :func:`validation_errors` validates an
  answer without fetching anything or backtracking, within
  :data:`MAX_VALIDATION_STEPS` keyword checks and
  :data:`MAX_VALIDATION_SECONDS` (a recursive schema that branches doubles
  the work per level of the answer: the answer is refused with why).
* :mod:`~nb_hitl.guard.stream`: a peer's event stream: a
  :class:`StreamBudget` of bytes, events, seconds and one event's size,
  enforced by a :class:`StreamMeter`.
"""

from .schema import (
    MAX_SCHEMA_BYTES,
    MAX_SCHEMA_DEPTH,
    MAX_SCHEMA_EXPANDED,
    NO_FETCH,
    SchemaRefused,
    check_schema,
    expanded_size,
    without_patterns,
)
from .stream import (
    MAX_EVENT_BYTES,
    MAX_RUN_BYTES,
    MAX_RUN_EVENTS,
    MAX_RUN_SECONDS,
    StreamBudget,
    StreamLimitReached,
    StreamMeter,
)
from .validate import MAX_VALIDATION_SECONDS, MAX_VALIDATION_STEPS, field_words, validation_errors

__all__ = [
    "MAX_EVENT_BYTES",
    "MAX_RUN_BYTES",
    "MAX_RUN_EVENTS",
    "MAX_RUN_SECONDS",
    "MAX_SCHEMA_BYTES",
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_EXPANDED",
    "MAX_VALIDATION_SECONDS",
    "MAX_VALIDATION_STEPS",
    "NO_FETCH",
    "SchemaRefused",
    "StreamBudget",
    "StreamLimitReached",
    "StreamMeter",
    "check_schema",
    "expanded_size",
    "field_words",
    "validation_errors",
    "without_patterns",
]
