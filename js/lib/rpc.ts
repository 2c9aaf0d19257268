// The page side of the request/response channel (see nb_hitl/widgets/_base.py):
// every message carries a request_id, and the kernel answers each one with
// {request_id, ok, error?, code?, field?}. A message left unanswered is
// reported to the person, never dropped silently: a decision the kernel has
// not answered yet stays pending (the person is told it is still on its way,
// and the kernel applies it when it gets to it), so the page never says
// "nothing was sent" about a decision the kernel may still apply. Only when
// the widget's comm is gone (the kernel restarted or stopped) are pending
// requests answered with code "no_kernel".

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

export interface RequestOptions {
  /** Give up after this many ms with code "no_answer" (for probes such as
   *  "ping", where giving up sends nothing that could be applied later).
   *  Without it, a request waits for its answer and `onSlow` is told. */
  timeoutMs?: number;
}

/** The sentence for a page whose widget lost its kernel (restart or stop). */
export const KERNEL_GONE =
  "The kernel restarted or stopped: this widget is no longer connected to the agent that made this reply. Run the cell again to start a new reply.";

let counter = 0;

interface Pending {
  resolve: (r: Reply) => void;
  timer: number;
}

export class Rpc {
  private pending = new Map<string, Pending>();
  /** told when a request has waited `slowMs` without an answer (it keeps waiting) */
  onSlow: ((action: string) => void) | null = null;
  /** told when the kernel answers anything (it is live) */
  onAnswer: (() => void) | null = null;
  /** told once, when a send fails because the comm is gone */
  onGone: (() => void) | null = null;
  /** set once a send failed because the comm is gone */
  gone = false;

  private handler = (msg: any) => {
    if (!msg || typeof msg !== "object" || typeof msg.request_id !== "string") return;
    const entry = this.pending.get(msg.request_id);
    if (!entry) return;
    this.pending.delete(msg.request_id);
    window.clearTimeout(entry.timer);
    entry.resolve(msg as Reply);
    this.onAnswer?.();
  };

  /**
   * @param slowMs after this many ms without an answer, `onSlow` is told.
   * @param keepWaiting true: a request waits for its answer past `slowMs`
   *   (a decision the kernel may still apply); false: it is answered with
   *   code "no_answer" then (the widgets that only read or edit settings).
   */
  constructor(private model: ChannelModel, private slowMs = 15000, private keepWaiting = false) {
    model.on("msg:custom", this.handler);
  }

  request(action: string, payload: Record<string, any> = {}, options: RequestOptions = {}): Promise<Reply> {
    const request_id = `r${Date.now().toString(36)}-${(counter++).toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    return new Promise<Reply>((resolve) => {
      if (this.gone) {
        resolve({ request_id, ok: false, code: "no_kernel", error: KERNEL_GONE });
        return;
      }
      const timer =
        options.timeoutMs !== undefined
          ? window.setTimeout(() => {
              this.pending.delete(request_id);
              resolve({ request_id, ok: false, code: "no_answer", error: "The kernel did not answer." });
            }, options.timeoutMs)
          : this.keepWaiting
            ? window.setTimeout(() => this.onSlow?.(action), this.slowMs)
            : window.setTimeout(() => {
                this.pending.delete(request_id);
                resolve({
                  request_id,
                  ok: false,
                  code: "no_answer",
                  error: `The kernel did not answer within ${Math.round(this.slowMs / 1000)} s. It may be busy, stopped or restarted; if it is only busy, this may still be applied when it gets to it.`,
                });
              }, this.slowMs);
      this.pending.set(request_id, { resolve, timer });
      try {
        this.model.send({ ...payload, action, request_id });
      } catch (err) {
        window.clearTimeout(timer);
        this.pending.delete(request_id);
        this.kernelGone();
        resolve({ request_id, ok: false, code: "no_kernel", error: KERNEL_GONE });
      }
    });
  }

  /** Whether a request is waiting for its answer. */
  get waiting(): boolean {
    return this.pending.size > 0;
  }

  /** The comm is gone: answer every pending request with code "no_kernel". */
  kernelGone(): void {
    const first = !this.gone;
    this.gone = true;
    for (const [request_id, { resolve, timer }] of this.pending) {
      window.clearTimeout(timer);
      resolve({ request_id, ok: false, code: "no_kernel", error: KERNEL_GONE });
    }
    this.pending.clear();
    if (first) this.onGone?.();
  }

  dispose(): void {
    this.model.off("msg:custom", this.handler);
    for (const { timer } of this.pending.values()) window.clearTimeout(timer);
    this.pending.clear();
  }
}

/** Ask the kernel whether this widget is still connected to a live kernel:
 *  "live", "gone" (the comm is closed: the kernel restarted or stopped) or
 *  "silent" (no answer in `timeoutMs`: busy with a blocking cell, or a
 *  notebook reopened without the kernel that ran it). */
export async function probe(rpc: Rpc, timeoutMs = 4000): Promise<"live" | "gone" | "silent"> {
  const reply = await rpc.request("ping", {}, { timeoutMs });
  if (reply.ok === true) return "live";
  return reply.code === "no_kernel" ? "gone" : "silent";
}

/** Whether the widget answered a ping within `timeoutMs` (see {@link probe}). */
export async function isLive(rpc: Rpc, timeoutMs = 4000): Promise<boolean> {
  return (await probe(rpc, timeoutMs)) === "live";
}
