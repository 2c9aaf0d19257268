"""Page-side checks shared by the front-end tests: the demo's cards, clicks and colours."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["answer_demo", "background_luminance", "card"]


def card(page: Any, kind: str, status: str = "open") -> Any:
    """The reply widget's pause card of ``kind`` (``confirm``, ``ask_user``...) in ``status``."""
    return page.locator(f'[data-testid="nbh-card"][data-kind="{kind}"][data-status="{status}"]')


def answer_demo(page: Any, file: str = "draft.md", timeout_ms: int = 90_000) -> Any:
    """Answer the demo agent's two pauses by clicks: pick ``file`` in AskUser, then Approve.

    Returns:
        the confirmation card's locator (after the click).
    """
    ask = card(page, "ask_user")
    ask.wait_for(timeout=timeout_ms)
    ask.locator(f'[data-testid="nbh-option"][data-label="{file}"]').click()
    ask.locator('[data-testid="nbh-answer-submit"]').click()
    confirm = card(page, "confirm")
    confirm.wait_for(timeout=timeout_ms)
    confirm.locator('[data-testid="nbh-approve"]').click()
    return confirm


def background_luminance(locator: Any) -> float:
    """Relative luminance (0 black .. 1 white) of the element's computed ``background-color``.

    Raises:
        AssertionError: the background is transparent or not ``rgb()``.
    """
    css = locator.evaluate("el => getComputedStyle(el).backgroundColor")
    m = re.fullmatch(r"rgba?\((\d+), (\d+), (\d+)(?:, ([\d.]+))?\)", css)
    assert m is not None and (m.group(4) is None or float(m.group(4)) > 0.5), f"no opaque background: {css}"
    r, g, b = (int(m.group(i)) / 255 for i in (1, 2, 3))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b
