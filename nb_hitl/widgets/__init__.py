"""The anywidget classes, one per view. They carry data; logic lives elsewhere."""

from ._base import RequestWidget
from .audit import AuditLogTable
from .reply import ReplyWidget

__all__ = ["RequestWidget", "ReplyWidget", "AuditLogTable"]
