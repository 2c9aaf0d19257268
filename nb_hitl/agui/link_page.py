"""The page of an approval link: a card with Approve / Deny, no JupyterLab.

``GET <path>/links/<token>`` shows the call (tool, policy, approvals so far,
the input as it will run) with Approve and Deny (an optional reason) for the
approver the link names; ``POST`` to the same address answers through
:meth:`nb_hitl.agui.links.Links.answer` and shows what the answer did. A link
that may not answer gets a page that says why (:class:`~nb_hitl.agui.links.LinkRefused`).

The page is built on the server as HTML where every string from the agent,
the model or the link is escaped (``html.escape``): it holds no script at
all, and its Content-Security-Policy allows nothing but its own inline style
(by hash) and form posts to itself. It is sized for a phone (one column,
large buttons). The token is in the address, so the page is never cached
and sends its address to no other site (``Referrer-Policy: same-origin``).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from functools import partial
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from .guard import Denied, host_allowed, origin_allowed
from .http import read_body
from .ids import readable_time
from .links import LinkRefused, Links

__all__ = ["STYLE", "CSP", "link_page", "link_route", "page_get", "page_post"]

STYLE = """
body{font:16px/1.45 system-ui,sans-serif;margin:0;padding:16px;background:#f6f7f9;color:#1b1f24}
main{max-width:30rem;margin:0 auto;background:#fff;border:1px solid #d0d7de;border-radius:10px;padding:16px}
h1{font-size:1.2rem;margin:0 0 8px}
pre{white-space:pre-wrap;word-break:break-word;background:#f0f2f5;padding:10px;border-radius:6px;font-size:.9rem}
.row{display:flex;gap:10px;margin-top:12px}
button{flex:1;font-size:1.05rem;padding:14px;border-radius:8px;border:1px solid #8c959f;cursor:pointer}
.approve{background:#1f883d;color:#fff;border-color:#1a7f37}
.deny{background:#fff;color:#cf222e;border-color:#cf222e}
textarea{width:100%;box-sizing:border-box;font:inherit;min-height:3rem}
.note{color:#57606a;font-size:.9rem}
.refused{border-color:#cf222e}
.done{border-color:#1a7f37}
"""

CSP = (
    "default-src 'none'; "
    f"style-src 'sha256-{base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()}'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
"""The page's Content-Security-Policy: no script, no resource; its own style; forms to itself."""

HEADERS = {
    "Content-Security-Policy": CSP,
    "Cache-Control": "no-store",
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}

e = html.escape


def _page(title: str, body: str, *, status: int = 200, css_class: str = "") -> HTMLResponse:
    text = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{STYLE}</style></head>"
        f'<body><main class="{css_class}" data-testid="nbh-link-page">{body}</main></body></html>'
    )
    return HTMLResponse(text, status_code=status, headers=HEADERS)


def _refused(exc: LinkRefused) -> HTMLResponse:
    body = (
        f'<h1>This link cannot answer</h1><p data-testid="nbh-link-refused" data-code="{e(exc.code)}">{e(str(exc))}</p>'
    )
    return _page("Link refused", body, status=exc.status, css_class="refused")


def _approvals_line(pause: Any) -> str:
    view = pause.to_view()
    got = [a for a in view["approvals"] if a.get("action") in ("approve", "modify")]
    needed = view["approvals_needed"]
    if needed <= 1:
        return "One approval runs this call."
    names = ", ".join(f"{a['by']} ({readable_time(a['at'])})" for a in got)
    return f"{len(got)} of {needed} approvals" + (f": {names}." if names else " so far.")


def _card(links: Links, token: str) -> HTMLResponse:
    link, _, pause = links.check(token)
    view = pause.to_view()
    expiry = f"This link expires at {readable_time(link.expires_at)}." if link.expires_at is not None else ""
    refused = view.get("approve_refused") or ""
    policy = f"<p>Asked by the policy <b>{e(view['policy'])}</b>.</p>" if view["policy"] else ""
    body = (
        f'<h1 data-testid="nbh-link-tool">{e(view["tool_name"])}</h1>'
        f"{policy}"
        f'<p data-testid="nbh-link-approvals">{e(_approvals_line(pause))}</p>'
        "<p>The call will run with this input:</p>"
        f'<pre data-testid="nbh-link-input">{e(view["input_text"])}</pre>'
        + (f'<p class="note">{e(refused)}</p>' if refused else "")
        + f'<p>You answer as <b data-testid="nbh-link-approver">{e(link.approver)}</b>. {e(expiry)}</p>'
        '<form method="post">'
        '<label for="reason" class="note">Reason (optional, told to the agent with a denial)</label>'
        '<textarea id="reason" name="reason" maxlength="2000"></textarea>'
        '<div class="row">'
        '<button class="approve" type="submit" name="action" value="approve" data-testid="nbh-link-approve">'
        "Approve</button>"
        '<button class="deny" type="submit" name="action" value="deny" data-testid="nbh-link-deny">Deny</button>'
        "</div></form>"
    )
    return _page(f"Approve {view['tool_name']}?", body)


def _done(got: dict[str, Any], action: str) -> HTMLResponse:
    pause = got["pause"]
    if got.get("status") == "approval_recorded":
        said = f"Your approval is recorded. {_approvals_line(pause)} The call waits for the others."
    elif action == "approve":
        said = f"Your approval is recorded and was the last one needed: {pause.tool_name} goes to the agent now."
    else:
        said = f"Your denial is recorded: {pause.tool_name} does not run, and the agent is told you denied it."
    body = f'<h1>Thank you</h1><p data-testid="nbh-link-done" data-action="{e(action)}">{e(said)}</p>'
    return _page("Answer recorded", body, css_class="done")


def _check_request(request: Request, links: Links) -> None:
    host = request.headers.get("host")
    access = links.server.access
    if not host_allowed(host, access.allowed_hosts):
        raise Denied(403, "bad_host", f"Host {str(host)[:100]!r} is not served here.")
    if not origin_allowed(request.headers.get("origin"), host, request.url.scheme, frozenset()):
        raise Denied(403, "bad_origin", "This page answers only forms sent from itself.")


def _denied(exc: Denied) -> HTMLResponse:
    body = f'<h1>Refused</h1><p data-testid="nbh-link-refused" data-code="{e(exc.code)}">{e(str(exc))}</p>'
    return _page("Refused", body, status=exc.status, css_class="refused")


async def page_get(request: Request, links: Links) -> Response:
    """``GET <path>/links/<token>``: the card, or the page saying why not."""
    try:
        _check_request(request, links)
        return _card(links, request.path_params["token"])
    except Denied as exc:
        return _denied(exc)
    except LinkRefused as exc:
        return _refused(exc)


async def page_post(request: Request, links: Links) -> Response:
    """``POST <path>/links/<token>`` (a form: ``action=approve|deny``,
    ``reason``; or JSON ``{"action", "reason"}``): answer, then show what
    the answer did, or why it was refused."""
    try:
        _check_request(request, links)
        raw = await read_body(request, 64 * 1024, links.server.limits.body_timeout)
        if (request.headers.get("content-type") or "").startswith("application/json"):
            data = json.loads(raw or b"{}")
            fields = data if isinstance(data, dict) else {}
        else:
            fields = {k: v[0] for k, v in parse_qs(raw.decode("utf-8", "replace")).items()}
        action, reason = str(fields.get("action") or ""), fields.get("reason")
        got = await links.answer(request.path_params["token"], action, reason if isinstance(reason, str) else None)
        return _done(got, action)
    except Denied as exc:
        return _denied(exc)
    except ValueError:
        return _refused(LinkRefused("refused", "The answer must be a form (action=approve or deny) or JSON."))
    except LinkRefused as exc:
        return _refused(exc)


async def link_page(request: Request, links: Links) -> Response:
    """The route of a link's address: :func:`page_get` or :func:`page_post`."""
    return await (page_post(request, links) if request.method == "POST" else page_get(request, links))


def link_route(links: Links) -> Route:
    """The route of ``<server path>/links/{token}`` (``GET`` and ``POST``)."""
    return Route(links.path(), partial(link_page, links=links), methods=["GET", "POST"])
