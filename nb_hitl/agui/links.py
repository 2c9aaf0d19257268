"""One-time approval links for the served agent's pauses.

A confirmation that waits on the :class:`~nb_hitl.agui.server.AguiServer`
(typically one that needs several approvals, ``Policy(approvals=N)``) can be
answered by a person who has no AG-UI client: the server issues a link
(:meth:`Links.issue`) that names the pause (thread, ``tool_call`` id,
``reply_id``), the SHA-256 of the input as the card shows it, the approver's
name and the pause's expiry, signed with HMAC-SHA256 under the same per-user
key as the checkpoints and the audit chain (:func:`nb_hitl.store.load_key`,
or the checkpoint store's key). Opening it shows a small page
(:mod:`nb_hitl.agui.link_page`); its Approve or Deny goes through the
Session's front door like every other answer (:meth:`Links.answer`), is
audited with ``origin = {"road": "agui", "thread_id", "principal", "link"}``
and ``decided_by`` the approver, and is counted towards the call's
approvals (:mod:`nb_hitl.answers.approvals`).

A link is refused (:class:`LinkRefused`, with the sentence its page shows)
when its signature does not match (forged or altered), it was used before
(kept in memory and in the thread's checkpoint, :data:`USED_KEY`),
its pause expired or closed, or the call's input is no longer the one it
was made for (someone modified it).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from .._signing import _sign, load_key
from ..answers.approvals import input_hash
from ..answers.record import origin
from ..errors import NbHitlError
from ..kinds import kind_spec
from ..labels import pause_label
from ..pauses import Pause
from .ids import readable_time
from .mapping import pause_interrupt_id
from .threads import answers_settled, checkpoint_id, unseen_answer

if TYPE_CHECKING:
    from .server import AguiServer
    from .threads import ThreadState

__all__ = ["Link", "LinkRefused", "Links", "input_hash"]

log = logging.getLogger("nb_hitl.agui")

ACTIONS = ("approve", "deny")
"""What a link's page may answer."""

USED_KEY = "nb_hitl.agui.links_used"
"""Key in the thread agent's ``AgentState.middle_context``: the redeemed links
of its calls still waiting (``{nonce: {"at", "action", "by", "tool_call_id"}}``),
written to the thread's checkpoint, so a restarted server refuses them too."""

PURPOSE = "nb_hitl.agui.approval-link"
"""Signed with a link's claims, so no other record signed with the same key
(a checkpoint, an audit line) can pass for a link, nor a link for them."""


@dataclass(frozen=True)
class Link:
    """What a link says (all of it signed).

    Attributes:
        thread_id: the AG-UI thread.
        tool_call_id: the parked call.
        reply_id: the parked reply the call belongs to.
        input_sha256: :func:`input_hash` of the pause when the link was made.
        approver: who answers through it (the audit's ``decided_by``).
        expires_at: epoch seconds after which it is refused, or ``None``
            (it still dies with its pause).
        nonce: the link's own id (one use; the audit's ``origin.link``).
    """

    thread_id: str
    tool_call_id: str
    reply_id: str
    input_sha256: str
    approver: str
    expires_at: float | None
    nonce: str


class LinkRefused(NbHitlError):
    """A link that may not answer (its page says why).

    Attributes:
        code: ``forged``, ``used``, ``expired``, ``closed``, ``input_changed``,
            ``refused`` (the front door's refusal).
        status: the HTTP status of its page.
    """

    STATUS = {"forged": 403, "used": 410, "expired": 410, "closed": 410, "input_changed": 409, "refused": 409}

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.status = self.STATUS.get(code, 400)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Links:
    """The links of one server: issued, checked, redeemed once.

    Args:
        server: the :class:`~nb_hitl.agui.server.AguiServer` (its threads,
            ``clock``, ``interrupt_ttl``, checkpoint store and ``path``).
    """

    def __init__(self, server: AguiServer) -> None:
        self.server = server
        self.used: dict[str, dict[str, Any]] = {}
        """Redeemed links by nonce: ``{"at", "action", "by", "tool_call_id"}`` (also kept in
        the thread's state, :data:`USED_KEY`)."""
        self.base_url: str | None = None
        """The endpoint as people reach it, for links made without ``base_url``
        (notifications); ``serve_in_background`` sets it to the handle's URL when unset."""
        self._key: bytes | None = None

    @property
    def key(self) -> bytes:
        """The signing key: the checkpoint store's, else :func:`nb_hitl.store.load_key`."""
        if self._key is None:
            store = self.server.registry.store
            self._key = store.key if store is not None else load_key()
        return self._key

    def path(self) -> str:
        """The route of a link's page (``<server path>/links/{token}``)."""
        return self.server.path.rstrip("/") + "/links/{token}"

    def _pause(self, thread_id: str, tool_call_id: str) -> tuple[ThreadState, Pause]:
        thread = self.server.registry.threads.get(thread_id)
        run = thread.session.current if thread is not None else None
        pause = run.pauses.get(tool_call_id) if run is not None else None
        if thread is None and self._saved(thread_id):  # a restarted server loads a thread on its owner's next run
            raise LinkRefused(
                "closed",
                "This call's conversation is not loaded on this server since it restarted: the link cannot be "
                "checked until its owner's client is back. Nothing was answered.",
            )
        if thread is None or run is None or pause is None:
            raise LinkRefused("closed", "This call no longer waits here: there is no such pause on this server.")
        return thread, pause

    def _saved(self, thread_id: str) -> bool:
        store = self.server.registry.store
        return store is not None and store.path(checkpoint_id(thread_id)).exists()

    def _kept(self, thread_id: str, *, keep: bool = False) -> dict[str, Any]:
        """The redeemed links kept in a live thread's state (:data:`USED_KEY`);
        ``keep``: create the record, first dropping the links of calls that no
        longer wait (they are refused as closed anyway)."""
        thread = self.server.registry.threads.get(thread_id)
        if thread is None:
            return {}
        context = thread.agent.state.middle_context
        kept = context.get(USED_KEY)
        if not isinstance(kept, dict):
            if not keep:
                return {}
            kept = context[USED_KEY] = {}
        if keep:
            parked = {tc.id for tc in thread.session.parked_tool_calls()}
            for nonce in [n for n, m in kept.items() if not isinstance(m, dict) or m.get("tool_call_id") not in parked]:
                del kept[nonce]
        return kept

    def notice(self, thread_id: str) -> Callable[[Pause, str], dict[str, Any]]:
        """What a notification from ``thread_id``'s session says beyond the
        session (:attr:`nb_hitl.notify.Notices.links`): ``{"thread_id",
        "link", "expires_at"}``, with a link for ``person`` when the pause is a
        confirmation and :attr:`base_url` is known, else ``link: None``."""

        def fields(pause: Pause, person: str) -> dict[str, Any]:
            out: dict[str, Any] = {"thread_id": thread_id, "link": None, "expires_at": self.expiry(pause)}
            if self.base_url and {"approve", "deny"} <= kind_spec(pause.kind).actions:
                out["link"] = self.issue(thread_id, pause.tool_call_id, person)
            return out

        return fields

    def expiry(self, pause: Pause) -> float | None:
        """When a pause's interrupt expires (epoch seconds; its ``deadline``
        and the server's ``interrupt_ttl``, the earlier), or ``None``."""
        ttl = self.server.interrupt_ttl
        times = [t for t in (pause.deadline, pause.created_at + ttl if ttl is not None else None) if t is not None]
        return min(times) if times else None

    def issue(self, thread_id: str, tool_call_id: str, approver: str, *, base_url: str | None = None) -> str:
        """A one-time link for ``approver`` to answer an open confirmation.

        Args:
            thread_id: the AG-UI thread.
            tool_call_id: the parked call (an interrupt's ``tool_call_id``).
            approver: who will answer through the link (recorded as
                ``decided_by``; a call that needs approvals from distinct
                people refuses a second approval by the same name).
            base_url: the server's endpoint as clients reach it
                (``ServerHandle.url``); default :attr:`base_url`.

        Returns:
            ``<base_url>/links/<token>``.

        Raises:
            LinkRefused: no such open pause (``closed``).
            ValueError: ``approver`` is empty, the pause is not a confirmation,
                or no ``base_url`` is known.
        """
        if not isinstance(approver, str) or not approver.strip():
            raise ValueError("A link names its approver (a non-empty name).")
        base_url = base_url or self.base_url
        if not base_url:
            raise ValueError("A link needs the server's address: pass base_url= or set links.base_url.")
        thread, pause = self._pause(thread_id, tool_call_id)
        if not {"approve", "deny"} <= kind_spec(pause.kind).actions:
            raise ValueError(f"Links answer confirmations (Approve / Deny); {tool_call_id!r} is a {pause.kind} pause.")
        if pause.status != "open":
            raise LinkRefused("closed", f"{pause_label(pause)} does not wait for an answer: {pause.status}.")
        link = Link(
            thread_id,
            tool_call_id,
            pause.reply_id,
            input_hash(pause),
            approver.strip(),
            self.expiry(pause),
            secrets.token_urlsafe(12),
        )
        body = {"purpose": PURPOSE, **asdict(link)}
        signature = _sign(self.key, body)
        token = _b64(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")) + "." + signature
        return base_url.rstrip("/") + "/links/" + token

    def read(self, token: str) -> Link:
        """The link a token carries, if this server signed it.

        Raises:
            LinkRefused: ``forged`` (not a token, or its signature does not match).
        """
        forged = LinkRefused(
            "forged", "This link is not valid: it was altered, or it was not made by this server. Nothing was answered."
        )
        body_text, _, signature = token.partition(".")
        try:
            body = json.loads(_unb64(body_text).decode("utf-8"))
            link = Link(**{k: v for k, v in body.items() if k != "purpose"})
        except (ValueError, TypeError, AttributeError, binascii.Error, UnicodeDecodeError):
            raise forged from None
        if body.get("purpose") != PURPOSE or not hmac.compare_digest(
            signature.encode(), _sign(self.key, body).encode()
        ):
            raise forged
        return link

    def check(self, token: str) -> tuple[Link, ThreadState, Pause]:
        """The link, its thread and its pause, if the link may still answer.

        Raises:
            LinkRefused: forged, used, expired, its pause closed or decided,
                or the call's input changed since the link was made.
        """
        link = self.read(token)
        used = self.used.get(link.nonce) or self._kept(link.thread_id).get(link.nonce)
        if used is not None:
            raise LinkRefused(
                "used",
                f"This link was already used: {used['by']} answered {used['action']} at {readable_time(used['at'])}. "
                "A link answers once.",
            )
        if link.expires_at is not None and self.server.clock() > link.expires_at:
            raise LinkRefused("expired", f"This link expired at {readable_time(link.expires_at)}, with its pause.")
        thread, pause = self._pause(link.thread_id, link.tool_call_id)
        if pause.reply_id != link.reply_id:
            raise LinkRefused("closed", "This call no longer waits here: the reply it belonged to has ended.")
        if pause.status != "open":
            why = pause.reason or (
                f"it was answered ({pause.decision.get('action')})" if pause.decision else pause.status
            )
            raise LinkRefused("closed", f"{pause_label(pause)} no longer waits for an answer: {why}.")
        if input_hash(pause) != link.input_sha256:
            raise LinkRefused(
                "input_changed",
                f"The input of {pause.tool_name} changed since this link was made (someone modified the call), "
                "so this link cannot answer for it. Ask for a new link to see the input as it is now.",
            )
        return link, thread, pause

    async def answer(self, token: str, action: str, reason: str | None = None) -> dict[str, Any]:
        """Answer through a link: the Session's front door, audit and count.

        Args:
            token: the link's token.
            action: ``"approve"`` or ``"deny"``.
            reason: a denial's reason (optional).

        Returns:
            the Session's answer (``{"status": "decided" | "approval_recorded", ...}``)
            plus ``"pause"`` (the pause).

        Raises:
            LinkRefused: see :meth:`check`; ``refused`` with the front door's
                sentence (the link stays unused then).
        """
        if action not in ACTIONS:
            raise LinkRefused("refused", "A link answers Approve or Deny.")
        named = self.server.registry.threads.get(self.read(token).thread_id)
        if named is not None:  # another answer being checked is decided or refused first (it may reopen the call)
            await answers_settled(named)
        link, thread, pause = self.check(token)
        message: dict[str, Any] = {"action": action, "tool_call_id": link.tool_call_id, "reply_id": link.reply_id}
        if action == "deny" and reason and reason.strip():
            message["reason"] = reason.strip()[:2000]
        where = origin("agui", thread_id=link.thread_id, principal=link.approver, link=link.nonce)
        # no await between the checks above and the front door below: nothing else answers in between
        mark = {"at": time.time(), "action": action, "by": link.approver, "tool_call_id": link.tool_call_id}
        self.used[link.nonce] = mark
        kept = self._kept(link.thread_id, keep=True)
        kept[link.nonce] = mark
        try:
            got = await thread.session.act(message, decided_by=link.approver, origin=where)
        except BaseException as exc:  # not taken: the link was not used
            self.used.pop(link.nonce, None)
            kept.pop(link.nonce, None)
            if isinstance(exc, NbHitlError):
                raise LinkRefused("refused", str(exc)) from None
            if not isinstance(exc, Exception):
                raise
            log.exception("an answer through a link failed")
            raise LinkRefused(
                "refused",
                f"The answer could not be recorded ({type(exc).__name__}). Nothing was answered; the link "
                "still answers once the server can record answers again.",
            ) from None
        thread.session._checkpoint_quietly()  # a restarted server refuses the link too
        if got.get("status") == "decided":  # the call goes on without the owner's client: it catches up later
            iid = pause_interrupt_id(pause, link.thread_id)
            thread.unseen.append(unseen_answer(iid, link.tool_call_id, link.approver, action))
        return {**got, "pause": pause}
