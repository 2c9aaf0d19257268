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
import type { Answer, PingProtocol, Protocol, Refusal } from "../messages";

/** What the channel needs of a model: anywidget's send / msg:custom. */
export type ChannelModel = Pick<AnyModel, "send" | "on" | "off">;

export interface RequestOptions {
  /** Give up after this many ms with code "no_answer" (for probes such as
   *  "ping", where giving up sends nothing that could be applied later).
   *  Without it, a request waits for its answer and `onSlow` is told. */
  timeoutMs?: number;
}

/** The sentence for a page whose widget lost its kernel (restart or stop). */
export const KERNEL_GONE =
  "The kernel restarted or stopped: this widget is no longer connected to the agent that made this reply. Run the cell again to start a new reply.";

/** The most one page message may carry, in UTF-8 bytes of its JSON. Jupyter's server closes the
 *  kernel's websocket on a message over 10 MiB (tornado's `max_message_size`): a larger message
 *  never reaches the kernel, and its request would wait for an answer that cannot come (a Modify
 *  stayed "Sending…", its preview said the kernel did not answer). The kernel's own limits on a
 *  field (1,000,000 characters for an edited input) are far below this. */
export const MAX_MESSAGE_BYTES = 8 * 1024 * 1024;

/** The UTF-8 size of `message`'s JSON (counted only when it could pass the bound: a character is at most 3 bytes). */
function messageBytes(message: object): number {
  const json = JSON.stringify(message);
  return json.length * 3 <= MAX_MESSAGE_BYTES ? json.length : new TextEncoder().encode(json).length;
}

let counter = 0;

interface Pending {
  resolve: (r: Answer) => void;
  timer: number;
}

/** A refusal the page makes itself (the kernel is gone, or did not answer). */
function refusal(request_id: string, code: "no_kernel" | "no_answer" | "too_large", error: string): Refusal {
  return { request_id, ok: false, code, error };
}

/** The channel of one widget; `P` names its actions (messages.ts). */
export class Rpc<P extends Protocol = PingProtocol> {
  private pending = new Map<string, Pending>();
  /** told when a request has waited `slowMs` without an answer (it keeps waiting) */
  onSlow: ((action: string) => void) | null = null;
  /** told when the kernel answers anything (it is live) */
  onAnswer: (() => void) | null = null;
  /** told once, when a send fails because the comm is gone */
  onGone: (() => void) | null = null;
  /** set once a send failed because the comm is gone */
  gone = false;

  private handler = (msg: unknown) => {
    if (!msg || typeof msg !== "object") return;
    const { request_id } = msg as { request_id?: unknown };
    if (typeof request_id !== "string") return;
    const entry = this.pending.get(request_id);
    if (!entry) return;
    this.pending.delete(request_id);
    window.clearTimeout(entry.timer);
    // the kernel's answer to this request (nb_hitl/widgets/_base.py); its fields are the action's answer
    entry.resolve(msg as Answer);
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

  /** Send `action` with `payload` and wait for the kernel's answer (see the header). */
  request<A extends keyof P & string>(action: A, payload: P[A]["send"], options: RequestOptions = {}): Promise<Answer<P[A]["answer"]>> {
    return this.send(action, payload, options) as Promise<Answer<P[A]["answer"]>>;
  }

  /** The liveness probe every widget answers (see {@link probe}). */
  ping(timeoutMs: number): Promise<Answer<PingProtocol["ping"]["answer"]>> {
    return this.send("ping", {}, { timeoutMs });
  }

  private send(action: string, payload: object, options: RequestOptions): Promise<Answer> {
    const request_id = `r${Date.now().toString(36)}-${(counter++).toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    return new Promise<Answer>((resolve) => {
      if (this.gone) {
        resolve(refusal(request_id, "no_kernel", KERNEL_GONE));
        return;
      }
      const size = messageBytes({ ...payload, action, request_id });
      if (size > MAX_MESSAGE_BYTES) {
        const mb = (n: number) => (n / (1024 * 1024)).toFixed(1);
        resolve(
          refusal(
            request_id,
            "too_large",
            `This is too large to send to the kernel: ${mb(size)} MB, and a message carries at most ${mb(MAX_MESSAGE_BYTES)} MB. Nothing was sent; shorten it in the card.`,
          ),
        );
        return;
      }
      const timer =
        options.timeoutMs !== undefined
          ? window.setTimeout(() => {
              this.pending.delete(request_id);
              resolve(refusal(request_id, "no_answer", "The kernel did not answer."));
            }, options.timeoutMs)
          : this.keepWaiting
            ? window.setTimeout(() => this.onSlow?.(action), this.slowMs)
            : window.setTimeout(() => {
                this.pending.delete(request_id);
                resolve(
                  refusal(
                    request_id,
                    "no_answer",
                    `The kernel did not answer within ${Math.round(this.slowMs / 1000)} s. It may be busy, stopped or restarted; if it is only busy, this may still be applied when it gets to it.`,
                  ),
                );
              }, this.slowMs);
      this.pending.set(request_id, { resolve, timer });
      try {
        this.model.send({ ...payload, action, request_id });
      } catch (err) {
        window.clearTimeout(timer);
        this.pending.delete(request_id);
        this.kernelGone();
        resolve(refusal(request_id, "no_kernel", KERNEL_GONE));
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
      resolve(refusal(request_id, "no_kernel", KERNEL_GONE));
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
export async function probe(rpc: Pick<Rpc<Protocol>, "ping">, timeoutMs = 4000): Promise<"live" | "gone" | "silent"> {
  const reply = await rpc.ping(timeoutMs);
  if (reply.ok === true) return "live";
  return reply.code === "no_kernel" ? "gone" : "silent";
}

/** Whether the widget answered a ping within `timeoutMs` (see {@link probe}). */
export async function isLive(rpc: Pick<Rpc<Protocol>, "ping">, timeoutMs = 4000): Promise<boolean> {
  return (await probe(rpc, timeoutMs)) === "live";
}
