// The reply widget drawn in jsdom for the page's unit tests: its real
// render (reply/index.ts) over a FakeModel whose kernel answers the connect
// "sync" and accepts decisions.
import { FakeModel, settle, type Answerer } from "./fake_model";
import reply from "../reply/index";
import type { PauseView, ReplyModel, SamplingView } from "../types";

/** A pause view as `Pause.to_view()` returns it, with `over` on top. */
export function pause(over: Partial<PauseView> = {}): PauseView {
  return {
    tool_call_id: "c1",
    reply_id: "r1",
    kind: "confirm",
    tool_name: "Bash",
    input_text: '{"command": "ls"}',
    sent_text: null,
    input_changes: [],
    approve_refused: null,
    decisions: [],
    input_schema: null,
    permission_message: null,
    decision_reason: null,
    bypass_immune: false,
    suggested_rules: [],
    ask_user: null,
    ask_user_error: null,
    created_at: 0,
    deadline: null,
    policy: null,
    status: "open",
    decision: null,
    reason: null,
    title: null,
    message: null,
    review_output: null,
    review_state: null,
    review_error: null,
    response_schema: null,
    form_error: null,
    elicitation_url: null,
    sampling: null,
    agent: "",
    tool_hints: null,
    shell_commands: [],
    shell_problems: [],
    approvals: [],
    approvals_needed: 1,
    file_change: null,
    dry_run: false,
    parent_tool_call_id: null,
    ...over,
  };
}

/** Type `value` into a field as a person does: its value, then the input and change events. */
export function typeInto(el: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement, value: string): void {
  el.value = value;
  el.dispatchEvent(new window.Event("input", { bubbles: true }));
  el.dispatchEvent(new window.Event("change", { bubbles: true }));
}

/** Tick a radio or checkbox as a click does: checked, then its change event. */
export function tick(el: HTMLInputElement): void {
  el.checked = true;
  el.dispatchEvent(new window.Event("change", { bubbles: true }));
}

/** An MCP sampling request as the kernel's view carries it: one user message, no settings, with `over` on top. */
export function samplingView(over: Partial<SamplingView> = {}): SamplingView {
  return {
    stage: "request",
    messages: [{ role: "user", text: "Summarize the table." }],
    system_prompt: null,
    model_hints: [],
    priorities: {},
    max_tokens: null,
    temperature: null,
    stop_sequences: [],
    include_context: null,
    completion: null,
    model: null,
    settings_note: null,
    error: null,
    ...over,
  };
}

export interface Page {
  fake: FakeModel<ReplyModel>;
  el: HTMLElement;
  /** the cards drawn, in order */
  cards(): HTMLElement[];
  card(id: string): HTMLElement;
  /** the control with this data-testid in card `id` */
  control<E extends HTMLElement = HTMLButtonElement>(id: string, testid: string): E | null;
  status(): string;
  close(): void;
}

/** The kernel of a live reply: answers the connect sync ("current") and accepts every decision. */
export const liveKernel: Answerer = (m) => {
  if (m.action === "sync") return { transcript: { seq: 0, current: true }, cards: { seq: 0, current: true } };
  if (m.action === "ping") return { live: true };
  return { status: "decided" };
};

/** Draw a reply with `pauses` (status "paused" unless given) and let it connect. */
export async function drawReply(pauses: unknown[], over: Partial<ReplyModel> = {}, kernel: Answerer = liveKernel): Promise<Page> {
  const fake = new FakeModel<ReplyModel>({
    agent_name: "helper",
    prompt: "tidy up",
    reply_id: "r1",
    status: "paused",
    status_reason: "",
    transcript: [],
    pauses,
    cards_seq: 0,
    final_text: "",
    transcript_seq: 0,
    final_entry: "",
    ...over,
  });
  fake.answer = kernel;
  const el = document.createElement("div");
  document.body.append(el);
  // the widget reads only model and el of its render props
  const props = { model: fake.model, el } as unknown as Parameters<typeof reply.render>[0];
  const dispose = await reply.render(props);
  await settle();
  const cards = () => Array.from(el.querySelectorAll<HTMLElement>('[data-testid="nbh-card"]'));
  const card = (id: string) => {
    const found = cards().find((c) => c.dataset.toolCallId === id);
    if (!found) throw new Error(`no card ${id}`);
    return found;
  };
  return {
    fake,
    el,
    cards,
    card,
    control: <E extends HTMLElement>(id: string, testid: string) => card(id).querySelector<E>(`[data-testid="${testid}"]`),
    status: () => el.querySelector('[data-testid="nbh-status"]')?.textContent || "",
    close: () => {
      if (typeof dispose === "function") void dispose();
      el.remove();
    },
  };
}
