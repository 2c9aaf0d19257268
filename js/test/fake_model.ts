// A widget model for the page's unit tests: anywidget's model interface
// (get / set / on / off / send) over plain traits. `set` fires "change:<key>"
// as a Backbone model does; `send` records what the page sent and, when
// `answer` is set, answers it as the kernel's channel does
// (nb_hitl/widgets/_base.py): {request_id, ok: true, ...fields}, or
// {request_id, ok: false, error, code, field} for a refusal.
import type { AnyModel } from "@anywidget/types";

export type Sent = { action: string; request_id: string; [key: string]: unknown };
export type Handler = (...args: unknown[]) => void;
/** The kernel's part: the fields of an ok answer, a refusal, or null (left unanswered). */
export type Answerer = (msg: Sent) => Record<string, unknown> | { refuse: string; field?: string } | null;

export class FakeModel<T extends object> {
  readonly sent: Sent[] = [];
  answer: Answerer | null = null;
  private handlers = new Map<string, Set<Handler>>();

  constructor(private traits: T) {}

  get<K extends keyof T>(key: K): T[K] {
    return this.traits[key];
  }

  set<K extends keyof T>(key: K, value: T[K]): void {
    this.traits[key] = value;
    this.fire(`change:${String(key)}`);
  }

  /** A value set without its change event yet: Backbone sets every attribute of an update before
   *  it fires their change events, so a handler of one may read another's new value first. */
  setBeforeItsEvent<K extends keyof T>(key: K, value: T[K]): void {
    this.traits[key] = value;
  }

  on(event: string, cb: Handler): void {
    if (!this.handlers.has(event)) this.handlers.set(event, new Set());
    this.handlers.get(event)!.add(cb);
  }

  off(event?: string | null, cb?: Handler | null): void {
    if (event && cb) this.handlers.get(event)?.delete(cb);
    else if (event) this.handlers.delete(event);
    else this.handlers.clear();
  }

  send(content: Sent): void {
    this.sent.push(content);
    const reply = this.answer?.(content);
    if (!reply) return;
    const answer =
      "refuse" in reply
        ? { request_id: content.request_id, ok: false, error: reply.refuse, code: "refused", field: reply.field ?? null }
        : { request_id: content.request_id, ok: true, ...reply };
    queueMicrotask(() => this.emit(answer));
  }

  /** A custom message from the kernel (a stream message or an answer). */
  emit(msg: unknown): void {
    this.fire("msg:custom", msg, []);
  }

  /** The model as the page code takes it. */
  get model(): AnyModel<T> {
    return this as unknown as AnyModel<T>;
  }

  /** The messages sent with `action`. */
  actions(action: string): Sent[] {
    return this.sent.filter((m) => m.action === action);
  }

  /** The kernel restarted or stopped: the comm is closed (a send throws, as the widget's comm does
   *  then) and the model hears "comm_live_update", as @jupyter-widgets tells every model. */
  closeComm(): void {
    this.answer = () => {
      throw new Error("the comm is closed");
    };
    this.commLiveUpdate();
  }

  /** "comm_live_update", as @jupyter-widgets tells every model when its kernel restarts or disconnects. */
  commLiveUpdate(): void {
    this.fire("comm_live_update");
  }

  private fire(event: string, ...args: unknown[]): void {
    for (const cb of Array.from(this.handlers.get(event) || [])) cb(...args);
  }
}

/** Let queued answers (microtasks) and the page's awaits run. */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}
