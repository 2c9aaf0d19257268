// The explorer's actions: each is sent to the kernel (nb_hitl/widgets/permissions.py
// answers every one, see messages.ts) and its refusal shown in the error box
// of the section it came from; "…" shows while any is on its way.
import type { AnyModel } from "@anywidget/types";
import type { Rpc } from "../lib/rpc";
import type { Accepted, PermissionsProtocol, Refusal } from "../messages";
import type { PermissionsModel } from "../types";

export type PermModel = AnyModel<PermissionsModel>;
export type Action = keyof PermissionsProtocol & string;

/** What each section gets: the model (its traits), the way to act, and the channel itself. */
export interface Section {
  model: PermModel;
  act: Channel["act"];
  rpc: Rpc<PermissionsProtocol>;
}

/** Show `text` in `box`, or hide the box when there is none. */
export function show(box: HTMLElement, text: string | null): void {
  box.textContent = text || "";
  box.hidden = !text;
}

/** A refusal as one line: the kernel's sentence and the field at fault. */
export function failure(reply: Refusal): string {
  const field = reply.field ? ` [${reply.field}]` : "";
  return `${reply.error || "Refused."}${field}`;
}

export class Channel {
  /** actions on their way */
  busy = 0;

  constructor(
    private readonly rpc: Rpc<PermissionsProtocol>,
    private readonly status: HTMLElement,
    private readonly root: HTMLElement,
  ) {}

  /** Send `action`; its answer, or null once its refusal is shown in `errorBox`. */
  act = async <A extends Action>(
    action: A,
    payload: PermissionsProtocol[A]["send"],
    errorBox: HTMLElement,
  ): Promise<Accepted<PermissionsProtocol[A]["answer"]> | null> => {
    this.busy++;
    this.status.textContent = "…";
    this.root.setAttribute("data-busy", "true");
    try {
      const reply = await this.rpc.request(action, payload);
      if (!reply.ok) {
        show(errorBox, failure(reply));
        return null;
      }
      show(errorBox, null);
      return reply;
    } finally {
      this.busy--;
      if (this.busy === 0) {
        this.status.textContent = "";
        this.root.removeAttribute("data-busy");
      }
    }
  };
}
