// The approvals of a call that needs several (Policy(approvals=N)), in one
// set of words wherever they are shown: the open and closed confirmation card
// (confirm.ts) and the service inbox's row (js/inbox.ts). Text only.
import type { ApprovalView, PauseView } from "../../types";
import { clockTime } from "../../lib/clock";


// A call that needs several approvals (Policy(approvals=N)): "1 of 2
// approvals: alice (10:42:07 CET)". Text only; names are the kernel's decided_by.
export function approvalsLine(p: Pick<PauseView, "approvals_needed" | "approvals">): string | null {
  const needed = p.approvals_needed || 1;
  if (needed <= 1) return null;
  const got = p.approvals || [];
  const who = got.map(approver);
  return `${got.length} of ${needed} approvals` + (who.length ? `: ${who.join(", ")}` : " so far") + (got.length ? "" : "; each must come from a different person.");
}

function approver(a: ApprovalView): string {
  // when it was given, in the browser's time (lib/clock.ts), as the approval link's page names the server's
  const when = Number.isFinite(a.at) ? ` (${clockTime(a.at)})` : "";
  return `${a.by}${a.action === "modify" ? " (edited the input)" : ""}${when}`;
}

// The closed card of such a call (decided, delivered, expired): who approved
// and when, and who denied. An answer the card only heard of (an AG-UI client
// catching up on a link's approval: `decision.by`, `decision.at`) is named with
// the time the server gives.
export function approvalsRecord(p: PauseView): string | null {
  const needed = p.approvals_needed || 1;
  if (needed <= 1) return null;
  const got = [...(p.approvals || [])];
  const by = p.decision && typeof p.decision.by === "string" ? p.decision.by : null;
  const action = String(p.decision?.action ?? "");
  const at = p.decision && typeof p.decision.at === "number" ? p.decision.at : NaN; // when the server said it was given
  if (by && !got.some((a) => a.by === by && a.action === action)) got.push({ by, at, action });
  const approving = got.filter((a) => a.action === "approve" || a.action === "modify");
  const others = got.filter((a) => !approving.includes(a));
  const said = others.map((a) => `${a.action === "deny" ? "denied" : a.action} by ${approver(a)}`);
  return `${approving.length} of ${needed} approvals` + (approving.length ? `: ${approving.map(approver).join(", ")}` : "") + (said.length ? `; ${said.join(", ")}` : "") + ".";
}
