// The page side of the request/response channel (see nb_hitl/widgets/_base.py):
// every message carries a request_id, and the kernel answers each one with
// {request_id, ok, error?, code?, field?}. A message left unanswered is
// reported to the person, never dropped silently.

import type { AnyModel } from "@anywidget/types";

/** A widget model whose traits are not typed (see types.ts for typed ones). */
export type AnyModelLike = AnyModel;

/** What the channel needs of a model: anywidget's send / msg:custom. */
export type ChannelModel = Pick<AnyModel, "send" | "on" | "off">;

export interface Reply {
  request_id: string;
  ok: boolean;
  error?: string;
  code?: string;
  field?: string | null;
  [key: string]: any;
}

let counter = 0;

export class Rpc {
  private pending = new Map<string, { resolve: (r: Reply) => void; timer: number }>();
  private handler = (msg: any) => {
    if (!msg || typeof msg !== "object" || typeof msg.request_id !== "string") return;
    const entry = this.pending.get(msg.request_id);
    if (!entry) return;
    this.pending.delete(msg.request_id);
    window.clearTimeout(entry.timer);
    entry.resolve(msg as Reply);
  };

  constructor(private model: ChannelModel, private timeoutMs = 15000) {
    model.on("msg:custom", this.handler);
  }

  request(action: string, payload: Record<string, any> = {}): Promise<Reply> {
    const request_id = `r${Date.now().toString(36)}-${(counter++).toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    return new Promise<Reply>((resolve) => {
      const timer = window.setTimeout(() => {
        this.pending.delete(request_id);
        resolve({
          request_id,
          ok: false,
          code: "no_answer",
          error: "The kernel did not answer. It may be busy, stopped or restarted; nothing was sent to the agent.",
        });
      }, this.timeoutMs);
      this.pending.set(request_id, { resolve, timer });
      try {
        this.model.send({ ...payload, action, request_id });
      } catch (err) {
        window.clearTimeout(timer);
        this.pending.delete(request_id);
        resolve({ request_id, ok: false, code: "no_kernel", error: `Could not reach the kernel: ${String(err)}` });
      }
    });
  }

  dispose(): void {
    this.model.off("msg:custom", this.handler);
    for (const { timer } of this.pending.values()) window.clearTimeout(timer);
    this.pending.clear();
  }
}

/** Ask the kernel whether this widget is still connected to a live kernel.
 *  A notebook reopened after a restart shows its saved state, but no kernel
 *  answers: the page then marks the widget "no longer live". */
export async function isLive(rpc: Rpc, timeoutMs = 4000): Promise<boolean> {
  const probe = rpc.request("ping");
  const timeout = new Promise<Reply>((resolve) =>
    window.setTimeout(() => resolve({ request_id: "", ok: false, code: "no_answer" }), timeoutMs),
  );
  const reply = await Promise.race([probe, timeout]);
  return reply.ok === true;
}
