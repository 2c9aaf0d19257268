"""The widgets' page code travels once per kernel: one shared model, a small loader per widget."""

from __future__ import annotations

import hashlib
import shutil
import threading
import time
import weakref
from pathlib import Path

import pytest

from nb_hitl.errors import NbHitlError
from nb_hitl.widgets import _page_code
from nb_hitl.widgets._page_code import (
    DIGEST_PLACEHOLDER,
    PageCode,
    loader_source,
    page_code,
    page_code_digest,
)
from nb_hitl.widgets.inbox import InboxWidget
from nb_hitl.widgets.reply import ReplyWidget

STATIC = Path(_page_code.__file__).resolve().parent.parent / "static"


def test_digest_is_sha256_of_code_nul_css() -> None:
    assert page_code_digest("a", "b") == hashlib.sha256(b"a\0b").hexdigest()
    assert page_code_digest("a", "b") != page_code_digest("a", "c")  # the theme counts too


def test_loader_source_writes_the_digest_and_refuses_a_template_without_placeholder() -> None:
    assert loader_source(f'const D="{DIGEST_PLACEHOLDER}";', "abc") == 'const D="abc";'
    with pytest.raises(RuntimeError, match="placeholder"):
        loader_source("export default {}", "abc")


def test_replies_share_one_page_code_model_and_carry_only_a_loader() -> None:
    bundle = (STATIC / "reply.js").read_text()
    first, second = ReplyWidget(agent_name="a"), ReplyWidget(agent_name="b")
    shared = page_code("reply")
    assert first._nbh_page_code == second._nbh_page_code == f"IPY_MODEL_{shared.model_id}"
    assert shared.code == bundle and shared.css == (STATIC / "theme.css").read_text()
    assert shared.digest == page_code_digest(shared.code, shared.css)
    for w in (first, second):
        state = w.get_state()
        assert shared.digest in state["_esm"] and DIGEST_PLACEHOLDER not in state["_esm"]
        assert len(state["_esm"]) < len(bundle) / 10
        assert "_css" not in state
    # another widget kind gets its own bundle, once
    inbox = InboxWidget()
    assert page_code("inbox").ref == inbox._nbh_page_code != first._nbh_page_code
    assert InboxWidget()._nbh_page_code == inbox._nbh_page_code


def test_the_page_cannot_write_the_page_code() -> None:
    shared = page_code("reply")
    before = (shared.code, shared.css, shared.digest)
    shared.set_state({"code": "window.pwned = 1", "digest": "0" * 64})
    assert (shared.code, shared.css, shared.digest) == before


def test_a_closed_page_code_model_is_replaced() -> None:
    old = page_code("reply")
    old.close()
    new = page_code("reply")
    assert new is not old and new.comm is not None
    assert ReplyWidget()._nbh_page_code == new.ref


def test_each_thread_that_makes_widgets_gets_its_own_page_code() -> None:
    # marimo's run mode: each page's kernel is a thread of one process
    here = page_code("reply")
    seen: list[str] = []
    worker = threading.Thread(target=lambda: seen.append(ReplyWidget()._nbh_page_code))
    worker.start()
    worker.join()
    assert seen and seen[0] != here.ref
    assert ReplyWidget()._nbh_page_code == here.ref


def test_reload_sends_new_code_and_renews_live_loaders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("reply.js", "theme.css", "loader.js"):
        shutil.copy(STATIC / name, tmp_path / name)
    monkeypatch.setattr(_page_code, "STATIC", tmp_path)
    monkeypatch.setattr(_page_code, "_shared", weakref.WeakKeyDictionary())
    widget = ReplyWidget(agent_name="hmr")
    shared = page_code("reply")
    old = shared.digest
    shared.reload()  # nothing changed: nothing sent
    assert shared.digest == old
    (tmp_path / "reply.js").write_text((tmp_path / "reply.js").read_text() + "\n// rebuilt\n")
    shared.reload()
    assert shared.digest != old and shared.code.endswith("// rebuilt\n")
    assert shared.digest in widget._esm and old not in widget._esm


def test_live_reload_follows_a_rebuilt_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # ANYWIDGET_HMR=1: anywidget's own watcher (watchfiles) on the bundle and the theme
    for name in ("reply.js", "theme.css", "loader.js"):
        shutil.copy(STATIC / name, tmp_path / name)
    monkeypatch.setenv("ANYWIDGET_HMR", "1")
    monkeypatch.setattr(_page_code, "STATIC", tmp_path)
    monkeypatch.setattr(_page_code, "_shared", weakref.WeakKeyDictionary())
    widget = ReplyWidget(agent_name="hmr")
    shared = page_code("reply")
    try:
        old = shared.digest
        original = (tmp_path / "theme.css").read_text()
        # the watcher thread has no "ready" signal: rebuild again every second
        # until it sees one (a change made before it watches is not seen)
        deadline = time.monotonic() + 30
        rebuilt = 0
        while shared.digest == old and time.monotonic() < deadline:
            rebuilt += 1
            (tmp_path / "theme.css").write_text(original + f"\n.nbh-rebuilt-{rebuilt} {{}}\n")
            stop = time.monotonic() + 1.0
            while shared.digest == old and time.monotonic() < stop:
                time.sleep(0.05)
        assert shared.digest != old and ".nbh-rebuilt-" in shared.css
        # the watcher's thread sets the digest, then each live widget's loader: wait for the loader
        while shared.digest not in widget._esm and time.monotonic() < deadline:
            time.sleep(0.05)
        assert shared.digest in widget._esm
    finally:
        for watcher in shared._watchers:
            watcher.stop_thread()


def test_page_code_needs_a_built_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A source checkout installed without building js/: the first widget's cell says what to run,
    not a FileNotFoundError traceback into nb_hitl."""
    monkeypatch.setattr(_page_code, "STATIC", tmp_path)
    with pytest.raises(NbHitlError) as err:
        PageCode("reply")
    text = str(err.value)
    assert text.startswith("nb_hitl's page code is not built (reply.js is missing from ")
    assert "`./run lab`" in text and "`npm install && npm run build`" in text


@pytest.mark.parametrize("value", ["inline", " Inline "])
def test_inline_page_code_gives_each_widget_its_own_bundle(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("NB_HITL_PAGE_CODE", value)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no traitlets deprecation on an unknown ``_css`` argument
        widget = ReplyWidget()
    state = widget.get_state()
    assert state["_esm"] == (STATIC / "reply.js").read_text() and state["_nbh_page_code"] == ""
    assert state["_css"] == (STATIC / "theme.css").read_text()
    monkeypatch.setenv("NB_HITL_PAGE_CODE", "shared")  # anything else: the shared model
    other = ReplyWidget()
    assert other._nbh_page_code.startswith("IPY_MODEL_") and not other.has_trait("_css")
