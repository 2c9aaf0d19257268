"""One copy of the widgets' page code per kernel, not one per widget.

anywidget sends a widget's ``_esm`` (and ``_css``) with every widget and
JupyterLab's ``saveState`` saves it with every widget's state, so a notebook
of 20 replies would carry 20 copies of the same bundle. Here each bundle
(``static/<name>.js`` with the theme ``static/theme.css``) is held by one
shared :class:`PageCode` model per kernel (per thread that makes widgets),
created the first time a widget needs it; each widget's ``_esm`` is the small loader ``static/loader.js``
(built from ``js/loader.ts``) with the bundle's SHA-256 digest written in,
and its ``_nbh_page_code`` trait names the shared model. The page imports
the bundle once per digest. A saved notebook keeps the shared model's state
once, so a reopened notebook still draws every saved widget.

With ``ANYWIDGET_HMR=1`` (anywidget's live-reload switch) the bundle files
are watched: a rebuilt bundle updates the shared model and every live
widget's loader, and anywidget redraws them.

A host whose widget manager cannot hand one model to another
(``widget_manager.get_model``; the loader then says so in the widget) can be
served the usual anywidget way, each widget with its own copy of the bundle:
set the environment variable ``NB_HITL_PAGE_CODE=inline`` in the kernel
(:func:`inline_page_code`) before the widgets are made.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pathlib
import threading
import weakref
from typing import Any

import anywidget
import traitlets

from ..errors import NbHitlError

__all__ = [
    "DIGEST_PLACEHOLDER",
    "PageCode",
    "inline_page_code",
    "inline_source",
    "loader_source",
    "page_code",
    "page_code_digest",
]

log = logging.getLogger(__name__)

STATIC = pathlib.Path(__file__).resolve().parent.parent / "static"
#: the string ``js/loader.ts`` carries where the kernel writes the digest
DIGEST_PLACEHOLDER = "__NBH_PAGE_CODE_DIGEST__"
_THEME = "theme.css"
_LOADER = "loader.js"


def page_code_digest(code: str, css: str) -> str:
    """SHA-256 (hex, 64 chars) of ``code + "\\0" + css``, UTF-8; the loader checks the same."""
    return hashlib.sha256((code + "\0" + css).encode("utf-8")).hexdigest()


def loader_source(template: str, digest: str) -> str:
    """The loader module with ``digest`` written in.

    Args:
        template: the built ``static/loader.js``.
        digest: :func:`page_code_digest` of the bundle it must load.

    Raises:
        RuntimeError: the template does not carry :data:`DIGEST_PLACEHOLDER`
            (a loader built from other sources).
    """
    if DIGEST_PLACEHOLDER not in template:
        raise RuntimeError(f"nb_hitl's {_LOADER} has no digest placeholder; rebuild the page code (./run setup)")
    return template.replace(DIGEST_PLACEHOLDER, digest)


def inline_page_code() -> bool:
    """Whether widgets carry their own bundle as ``_esm`` (``NB_HITL_PAGE_CODE=inline``,
    read each time a widget is made) instead of the shared page-code model."""
    return os.environ.get("NB_HITL_PAGE_CODE", "").strip().lower() == "inline"


def inline_source(name: str) -> tuple[str, str]:
    """``(esm, css)`` of bundle ``name`` for a widget that carries its own copy.

    Raises:
        FileNotFoundError: the bundle is not built (``./run setup``).
    """
    return _read(name)


class PageCode(anywidget.AnyWidget):
    """The shared model holding one bundle's page code for every widget of a kernel.

    Never displayed. Its ``code`` / ``css`` are written by the kernel only: a
    page message that tries to set them (or any of its traits) is ignored, so
    the kernel neither takes nor echoes it to other pages.

    Args:
        name: the bundle, ``static/<name>.js`` (``reply``, ``permissions``, ...).

    Raises:
        FileNotFoundError: the bundle is not built (``./run setup``).
    """

    _esm = "export default { render() {} };"

    name = traitlets.Unicode("").tag(sync=True)
    code = traitlets.Unicode("").tag(sync=True)
    css = traitlets.Unicode("").tag(sync=True)
    digest = traitlets.Unicode("").tag(sync=True)

    def __init__(self, name: str) -> None:
        code, css = _read(name)
        super().__init__(name=name, code=code, css=css, digest=page_code_digest(code, css))
        self._loader: str | None = None
        self._users: weakref.WeakSet[anywidget.AnyWidget] = weakref.WeakSet()
        self._watchers: list[Any] = []
        if os.environ.get("ANYWIDGET_HMR") == "1":
            self._watch()

    @property
    def ref(self) -> str:
        """``"IPY_MODEL_<model_id>"``, the value of a widget's ``_nbh_page_code``."""
        return f"IPY_MODEL_{self.model_id}"

    def loader(self) -> str:
        """The ``_esm`` of a widget drawn with this code (:func:`loader_source`)."""
        if self._loader is None:
            self._loader = loader_source((STATIC / _LOADER).read_text(encoding="utf-8"), self.digest)
        return self._loader

    def attach(self, widget: anywidget.AnyWidget) -> None:
        """Remember a live widget drawn with this code (its loader is renewed on a live reload)."""
        self._users.add(widget)

    def set_state(self, sync_data: dict[str, Any]) -> None:
        """Ignore page writes: the page code comes from the kernel only."""
        if sync_data:
            log.warning("ignored a page's attempt to set nb_hitl's page code (%s)", ", ".join(sorted(sync_data)))

    def reload(self) -> None:
        """Read the bundle again; if it changed, send it and renew every live widget's loader."""
        code, css = _read(self.name)
        digest = page_code_digest(code, css)
        if digest == self.digest:
            return
        with self.hold_sync():
            self.code, self.css, self.digest = code, css, digest
        self._loader = None
        loader = self.loader()
        for widget in list(self._users):
            if widget.comm is not None:
                widget.set_trait("_esm", loader)

    def _watch(self) -> None:
        # anywidget's own file watcher (watchfiles), as it uses for a file-backed _esm
        from anywidget._util import try_file_contents

        for path in (STATIC / f"{self.name}.js", STATIC / _THEME):
            contents = try_file_contents(path)
            if contents is not None and hasattr(contents, "changed"):
                contents.changed.connect(lambda _text: self.reload())
                self._watchers.append(contents)


def _read(name: str) -> tuple[str, str]:
    """The built page code of bundle ``name`` and the theme.

    Raises:
        NbHitlError: the page code was never built (a source checkout installed
            without ``./run lab``, or ``npm run build`` not run in ``js/``).
    """
    try:
        code = (STATIC / f"{name}.js").read_text(encoding="utf-8")
        css = (STATIC / _THEME).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise NbHitlError(
            f"nb_hitl's page code is not built ({pathlib.Path(str(exc.filename)).name} is missing from "
            f"{STATIC}): run `./run lab` in the nb_hitl checkout, or `npm install && npm run build` in its "
            "js/ folder, then run this cell again."
        ) from None
    return code, css


# one set per thread that makes widgets: a Jupyter kernel makes them on its
# main thread, while ``marimo run`` runs each page's kernel in its own thread
# of one process, and a model opened for one page is unknown to the others
_shared: weakref.WeakKeyDictionary[threading.Thread, dict[str, PageCode]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def page_code(name: str) -> PageCode:
    """The :class:`PageCode` for bundle ``name`` of the calling kernel, created on first use.

    One per kernel: per thread that makes widgets (a Jupyter kernel's main
    thread; each page's kernel thread under ``marimo run``). A closed one
    (``Widget.close_all()``, a front end that closed it) is replaced.
    """
    with _lock:
        mine = _shared.setdefault(threading.current_thread(), {})
        shared = mine.get(name)
        if shared is None or shared.comm is None:
            shared = mine[name] = PageCode(name)
        return shared
