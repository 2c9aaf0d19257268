// The page side of nb_hitl's ReplyWidget: a live transcript of one agent
// reply with its pauses drawn inline (confirmation, AskUser, external tool).
// Everything from the agent or the model is set with textContent (see
// lib/dom.ts); colours come from --jp-* variables (lib/theme.css).
import css from "./lib/theme.css";
import { h, clear, prettyJson } from "./lib/dom";
import { Rpc, isLive, AnyModelLike, Reply } from "./lib/rpc";
import { renderSchemaForm } from "./lib/form";

interface Entry {
  kind: "text" | "tool_call" | "tool_result" | "note";
  id: string;
  text: string;
  name?: string;
  state?: string;
  tool_call_id?: string;
}

interface RuleView {
  index: number;
  label: string;
}

interface Option {
  label: string;
  description: string;
  preview?: string | null;
}
interface Question {
  question: string;
  header: string;
  context?: string | null;
  options: Option[];
  multi_select?: boolean;
}

interface PauseView {
  tool_call_id: string;
  reply_id: string;
  kind: "confirm" | "ask_user" | "external" | "form" | "review";
  tool_name: string;
  input_text: string;
  input_schema?: any;
  permission_message?: string | null;
  decision_reason?: string | null;
  bypass_immune?: boolean;
  suggested_rules: RuleView[];
  ask_user?: { questions: Question[] } | null;
  ask_user_error?: string | null;
  response_schema?: any;
  deadline?: number | null;
  policy?: string | null;
  status: string;
  decision?: any;
  reason?: string | null;
  title?: string | null;
  message?: string | null;
  review_output?: string | null;
  review_state?: string | null;
  review_error?: string | null;
  form_error?: string | null;
}

interface CardUi {
  mode: "view" | "modify" | "rules";
  error: string;
  errorField: string;
  pending: boolean;
  el: HTMLElement | null;
  key: string;
}

function decisionText(p: PauseView): string {
  const d = p.decision || {};
  switch (d.action) {
    case "approve":
      return d.accepted_rules && d.accepted_rules.length
        ? `Approved, and always allow: ${d.accepted_rules.join(", ")}`
        : "Approved";
    case "deny":
      return "Denied";
    case "modify":
      return `Approved with edited input: ${JSON.stringify(d.edited_input)}`;
    case "answer":
      return (
        "Answered: " +
        (d.answers || [])
          .map((a: any) => `${a.question} → ${[...(a.selected || []), ...(a.other ? [`"${a.other}"`] : [])].join(", ")}`)
          .join("; ")
      );
    case "external_result":
      return `Result sent (${d.state})`;
    case "return_error":
      return "Error returned to the agent";
    case "accept":
      return "Result accepted";
    case "edit":
      return "Result edited before the model saw it";
    case "reject":
      return "Result rejected";
    case "submit":
      return "Form submitted";
    case "timeout":
      return `Deadline passed: ${d.applied || "default applied"}`;
    default:
      return d.action ? String(d.action) : "Decided";
  }
}

const STATUS_TEXT: Record<string, string> = {
  running: "running",
  paused: "waiting for you",
  finished: "finished",
  interrupted: "interrupted",
  expired: "expired",
  error: "error",
};

function render({ model, el }: { model: AnyModelLike; el: HTMLElement }) {
  const rpc = new Rpc(model);
  const style = h("style", {});
  style.textContent = css;
  const root = h("div", { class: "nbh nbh-reply", "data-testid": "nbh-reply" });
  const banner = h("div", { class: "nbh-banner", "data-testid": "nbh-live-banner", hidden: true });
  const header = h("div", { class: "nbh-row" });
  const groupBar = h("div", { class: "nbh-row", "data-testid": "nbh-group", hidden: true });
  // outside the bar: the bar is redrawn (and hidden with one call left) as
  // the sent cards change state, and the note must stay readable
  const groupNote = h("div", { class: "nbh-muted", "data-testid": "nbh-group-note" });
  const transcriptEl = h("div", { class: "nbh-transcript" });
  const looseCards = h("div", { class: "nbh-loose" });
  const finalEl = h("div", { class: "nbh-final", "data-testid": "nbh-final" });
  root.append(banner, header, groupBar, groupNote, transcriptEl, looseCards, finalEl);
  el.append(style, root);

  const entryEls = new Map<string, { el: HTMLElement; body: HTMLElement; slot?: HTMLElement; state?: HTMLElement }>();
  const cards = new Map<string, CardUi>();
  // What "Submit all" would send for each open card (filled AskUser panels,
  // external outputs, edited inputs); confirmations in view mode have none.
  const drafts = new Map<string, () => { action: string; payload: Record<string, any> } | null>();
  // The last value a form card tried to submit, so a refused answer is not lost on redraw.
  const formValues = new Map<string, Record<string, any>>();
  // What each open card held (its draft) when it was last redrawn: a refusal,
  // "Sending…" or a status change rebuilds the card, and what the person typed
  // or picked must survive it (an edit refused as invalid JSON is fixed, not retyped).
  const typed = new Map<string, { action: string; payload: Record<string, any> }>();
  let live: boolean | null = null; // null: not known yet
  let timer: number | undefined;

  const uiFor = (id: string): CardUi => {
    let ui = cards.get(id);
    if (!ui) {
      ui = { mode: "view", error: "", errorField: "", pending: false, el: null, key: "" };
      cards.set(id, ui);
    }
    return ui;
  };

  async function send(p: PauseView, action: string, payload: Record<string, any> = {}) {
    const ui = uiFor(p.tool_call_id);
    if (ui.pending) return;
    ui.pending = true;
    ui.error = "";
    ui.errorField = "";
    redrawCard(p, true);
    const reply: Reply = await rpc.request(action, { tool_call_id: p.tool_call_id, reply_id: p.reply_id, ...payload });
    ui.pending = false;
    if (!reply.ok) {
      ui.error = reply.error || "Refused.";
      ui.errorField = reply.field || "";
    } else {
      ui.mode = "view";
    }
    redrawCard(currentPause(p.tool_call_id) || p, true);
  }

  function currentPause(id: string): PauseView | undefined {
    return (model.get("pauses") as PauseView[]).find((p) => p.tool_call_id === id);
  }

  function canAct(p: PauseView): boolean {
    return p.status === "open" && live !== false;
  }

  // ---------------------------------------------------------------- header
  function drawHeader() {
    clear(header);
    const status = String(model.get("status") || "");
    header.append(
      h("span", { class: "nbh-title" }, String(model.get("agent_name") || "agent")),
      model.get("prompt") ? h("span", { class: "nbh-muted" }, `← ${model.get("prompt")}`) : "",
      live === false && (status === "running" || status === "paused")
        ? h("span", { class: "nbh-chip", "data-testid": "nbh-status", "data-status": "not-live" }, "not live")
        : h("span", { class: "nbh-chip", "data-testid": "nbh-status", "data-status": status }, STATUS_TEXT[status] || status),
    );
    if (status === "running" || status === "paused") {
      header.append(
        h(
          "button",
          {
            "data-testid": "nbh-interrupt",
            disabled: live === false,
            onclick: async () => {
              const reply = await rpc.request("interrupt", {});
              if (!reply.ok) showBanner(reply.error || "Could not interrupt.");
            },
          },
          "Interrupt",
        ),
      );
    }
    const reason = String(model.get("status_reason") || "");
    if (reason && status !== "running" && status !== "paused") header.append(h("span", { class: "nbh-muted" }, reason));
  }

  function showBanner(text: string) {
    banner.hidden = false;
    banner.textContent = text;
  }

  // ------------------------------------------------------------ transcript
  function drawTranscript() {
    const entries = (model.get("transcript") as Entry[]) || [];
    for (const e of entries) {
      let rec = entryEls.get(e.id);
      if (!rec) {
        const body = h("div", { class: e.kind === "text" ? "nbh-text" : "nbh-pre" });
        let el: HTMLElement;
        let slot: HTMLElement | undefined;
        let state: HTMLElement | undefined;
        if (e.kind === "tool_call") {
          slot = h("div", { class: "nbh-slot" });
          el = h("div", { class: "nbh-entry nbh-call", "data-testid": "nbh-tool-call" }, h("div", { class: "nbh-muted" }, `→ ${e.name || "tool"}`), body, slot);
        } else if (e.kind === "tool_result") {
          state = h("span", { class: "nbh-chip" });
          el = h("div", { class: "nbh-entry nbh-result", "data-testid": "nbh-tool-result" }, h("div", { class: "nbh-muted" }, `← ${e.name || "result"} `, state), body);
        } else if (e.kind === "note") {
          el = h("div", { class: "nbh-entry nbh-warn" }, body);
        } else {
          el = h("div", { class: "nbh-entry", "data-testid": "nbh-text" }, body);
          body.style.whiteSpace = "pre-wrap";
        }
        rec = { el, body, slot, state };
        entryEls.set(e.id, rec);
        transcriptEl.append(el);
      }
      const text = e.kind === "tool_call" ? prettyJson(e.text) : e.text;
      if (rec.body.textContent !== text) rec.body.textContent = text;
      if (rec.state) {
        const st = e.state || "";
        if (rec.state.textContent !== st) rec.state.textContent = st;
        // an external call's result "starts" before anyone answered it: show
        // the entry once it has text or an end state
        rec.el.hidden = st === "running" && !e.text;
      }
    }
  }

  // ----------------------------------------------------------------- cards
  function drawCards() {
    const pauses = (model.get("pauses") as PauseView[]) || [];
    for (const p of pauses) redrawCard(p, false);
    drawGroup(pauses);
  }

  // A reply parked on several calls is one group: each card keeps its own
  // controls, and these act on every open card at once.
  function drawGroup(pauses: PauseView[]) {
    const open = pauses.filter((p) => canAct(p));
    if (!open.length) groupNote.textContent = "";
    clear(groupBar);
    groupBar.hidden = open.length < 2;
    if (open.length < 2) return;
    const confirms = open.filter((p) => p.kind === "confirm");
    const sendAll = async (items: PauseView[], pick: (p: PauseView) => { action: string; payload: Record<string, any> } | null) => {
      for (const p of items) {
        const d = pick(p);
        if (d) await send(p, d.action, d.payload);
      }
    };
    groupBar.append(
      h("span", { class: "nbh-muted" }, `${open.length} open calls in this reply`),
      confirms.length
        ? h("button", { "data-testid": "nbh-approve-all", onclick: () => sendAll(confirms, () => ({ action: "approve", payload: {} })) }, `Approve all (${confirms.length})`)
        : "",
      confirms.length
        ? h("button", { "data-testid": "nbh-deny-all", onclick: () => sendAll(confirms, () => ({ action: "deny", payload: {} })) }, `Deny all (${confirms.length})`)
        : "",
      h("button", {
        class: "nbh-primary",
        "data-testid": "nbh-submit-all",
        onclick: async () => {
          const ready = open.filter((p) => (drafts.get(p.tool_call_id) || (() => null))());
          const waiting = open.filter((p) => !ready.includes(p)).map((p) => p.tool_name);
          groupNote.textContent = ready.length
            ? waiting.length ? `Sent what is filled in; still to answer: ${waiting.join(", ")}.` : ""
            : `Nothing to send yet: answer ${waiting.join(", ")} first (confirmations: use their buttons, or Approve all / Deny all).`;
          await sendAll(ready, (p) => (drafts.get(p.tool_call_id) || (() => null))());
        },
      }, "Submit all"),
    );
  }

  function redrawCard(p: PauseView, force: boolean) {
    const ui = uiFor(p.tool_call_id);
    const key = JSON.stringify([p.status, p.decision, p.reason, live, p.deadline]);
    if (!force && ui.el && ui.key === key) {
      // the pause may have arrived before its tool call's transcript entry:
      // move the card under its call once that entry exists
      const entry = entryEls.get("call:" + p.tool_call_id);
      if (entry?.slot && ui.el.parentElement !== entry.slot) {
        entry.slot.append(ui.el);
        entry.body.hidden = true;
      }
      return;
    }
    ui.key = key;
    const held = drafts.get(p.tool_call_id);
    const snapshot = held ? held() : null;
    if (snapshot) typed.set(p.tool_call_id, snapshot);
    else typed.delete(p.tool_call_id);
    drafts.delete(p.tool_call_id);
    const card = buildCard(p, ui);
    const callEntry = entryEls.get("call:" + p.tool_call_id);
    const slot = callEntry?.slot;
    // The card shows the call's input (or its questions): the raw JSON of
    // the streamed tool call above it would only repeat it.
    if (callEntry) callEntry.body.hidden = true;
    if (ui.el && ui.el.parentElement) {
      ui.el.replaceWith(card);
    } else {
      (slot || looseCards).append(card);
    }
    ui.el = card;
  }

  function errorBox(ui: CardUi, field?: string): HTMLElement | null {
    if (!ui.error) return null;
    if (field !== undefined && !(ui.errorField || "").startsWith(field)) return null;
    return h("div", { class: "nbh-error", "data-testid": "nbh-error", role: "alert" }, ui.error);
  }

  function buildCard(p: PauseView, ui: CardUi): HTMLElement {
    const open = canAct(p);
    const card = h("div", {
      class: `nbh-card ${open ? "nbh-open" : "nbh-closed"}`,
      "data-testid": "nbh-card",
      "data-kind": p.kind,
      "data-status": p.status,
      "data-tool-call-id": p.tool_call_id,
    });
    const kindText: Record<string, string> = open
      ? {
          confirm: "Needs your confirmation",
          ask_user: "The agent asks you",
          external: "Run this tool yourself",
          form: "The agent asks for input",
          review: "Review this result",
        }
      : { confirm: "Confirmation", ask_user: "Question", external: "External tool", form: "Form", review: "Review" };
    card.append(
      h(
        "div",
        { class: "nbh-row" },
        h("span", { class: "nbh-chip" }, kindText[p.kind] || p.kind),
        h("span", { class: "nbh-title" }, p.title || p.tool_name),
        p.policy ? h("span", { class: "nbh-chip", "data-testid": "nbh-policy" }, `policy: ${p.policy}`) : null,
        p.bypass_immune ? h("span", { class: "nbh-chip" }, "safety check") : null,
        deadlineEl(p),
      ),
    );
    if (p.status !== "open") {
      const cls = p.status === "expired" ? "nbh-warn" : "nbh-ok";
      const text =
        p.status === "expired"
          ? `No longer live: ${p.reason || "the reply ended"}`
          : p.status === "deciding"
            ? "Recording your decision…"
            : decisionText(p);
      card.append(h("div", { class: cls, "data-testid": "nbh-decision" }, text));
      if (p.decision && p.decision.edited_input !== undefined) {
        card.append(
          h("div", { class: "nbh-muted" }, "Asked for:"),
          h("pre", { class: "nbh-pre" }, prettyJson(p.input_text)),
          h("div", { class: "nbh-muted" }, "Ran with your edit:"),
          h("pre", { class: "nbh-pre", "data-testid": "nbh-edited-input" }, JSON.stringify(p.decision.edited_input, null, 2)),
        );
      } else if (p.kind !== "ask_user" || !p.ask_user) {
        card.append(h("pre", { class: "nbh-pre" }, prettyJson(p.input_text)));
      }
      const err = errorBox(ui);
      if (err) card.append(err);
      return card;
    }
    if (live === false) {
      card.append(h("div", { class: "nbh-warn" }, "No longer live: the kernel that ran this reply is gone."));
    }
    if (p.kind === "confirm") buildConfirm(card, p, ui, open);
    else if (p.kind === "ask_user") buildAskUser(card, p, ui, open);
    else if (p.kind === "form") buildForm(card, p, ui, open);
    else if (p.kind === "review") buildReview(card, p, ui, open);
    else buildExternal(card, p, ui, open);
    if (ui.pending) card.append(h("div", { class: "nbh-muted" }, "Sending…"));
    return card;
  }

  function deadlineEl(p: PauseView): HTMLElement | null {
    if (!p.deadline || p.status !== "open") return null;
    const span = h("span", { class: "nbh-chip", "data-testid": "nbh-deadline", "data-deadline": String(p.deadline) });
    span.textContent = timeLeft(p.deadline);
    return span;
  }

  function timeLeft(deadline: number): string {
    const s = Math.max(0, Math.round(deadline - Date.now() / 1000));
    return s > 0 ? `${s}s left` : "deadline passed";
  }

  function buildConfirm(card: HTMLElement, p: PauseView, ui: CardUi, open: boolean) {
    if (p.permission_message)
      card.append(h("div", { class: "nbh-muted", "data-testid": "nbh-permission-message" }, p.permission_message + (p.decision_reason ? ` (${p.decision_reason})` : "")));
    if (p.message) card.append(h("div", { class: "nbh-info" }, p.message));
    const dis = !open || ui.pending;
    if (ui.mode === "modify") {
      const area = h("textarea", { "data-testid": "nbh-modify-input", spellcheck: "false", "aria-label": "Edited tool input (JSON)" }) as HTMLTextAreaElement;
      const kept = typed.get(p.tool_call_id);
      area.value = kept && kept.action === "modify" ? String(kept.payload.input) : p.input_text;
      drafts.set(p.tool_call_id, () => ({ action: "modify", payload: { input: area.value } }));
      card.append(
        h("div", { class: "nbh-muted" }, `Edit the input of ${p.tool_name} (JSON). The tool name cannot change; the edit is checked against the tool's schema and the permission rules.`),
        area,
        errorBox(ui, "input") || errorBox(ui, "name") || errorBox(ui) || "",
        h(
          "div",
          { class: "nbh-row" },
          h("button", { class: "nbh-primary", "data-testid": "nbh-modify-submit", disabled: dis, onclick: () => send(p, "modify", { input: area.value }) }, "Approve edited input"),
          h("button", { "data-testid": "nbh-modify-cancel", disabled: ui.pending, onclick: () => { ui.mode = "view"; ui.error = ""; redrawCard(p, true); } }, "Cancel"),
        ),
      );
      return;
    }
    card.append(h("pre", { class: "nbh-pre", "data-testid": "nbh-input" }, prettyJson(p.input_text)));
    if (ui.mode === "rules") {
      const boxes: HTMLInputElement[] = [];
      const list = h("div", { class: "nbh-rules" });
      for (const r of p.suggested_rules) {
        const cb = h("input", { type: "checkbox", "data-testid": "nbh-rule", "data-index": r.index }) as HTMLInputElement;
        cb.checked = true;
        boxes.push(cb);
        list.append(h("label", { class: "nbh-row" }, cb, h("code", {}, r.label)));
      }
      card.append(
        h("div", { class: "nbh-muted" }, "Always allow: the chosen rules are added to the agent's permission rules, so matching calls run without asking."),
        list,
        errorBox(ui) || "",
        h(
          "div",
          { class: "nbh-row" },
          h(
            "button",
            {
              class: "nbh-primary",
              "data-testid": "nbh-rules-submit",
              disabled: dis,
              onclick: () => send(p, "approve", { rules: boxes.filter((b) => b.checked).map((b) => Number(b.dataset.index)) }),
            },
            "Approve and add the chosen rules",
          ),
          h("button", { disabled: ui.pending, onclick: () => { ui.mode = "view"; ui.error = ""; redrawCard(p, true); } }, "Cancel"),
        ),
      );
      return;
    }
    card.append(
      errorBox(ui) || "",
      h(
        "div",
        { class: "nbh-row" },
        h("button", { class: "nbh-primary", "data-testid": "nbh-approve", disabled: dis, onclick: () => send(p, "approve") }, "Approve"),
        h("button", { class: "nbh-danger", "data-testid": "nbh-deny", disabled: dis, onclick: () => send(p, "deny") }, "Deny"),
        h("button", { "data-testid": "nbh-modify", disabled: dis, onclick: () => { ui.mode = "modify"; ui.error = ""; redrawCard(p, true); } }, "Modify…"),
        p.suggested_rules.length
          ? h("button", { "data-testid": "nbh-always", disabled: dis, onclick: () => { ui.mode = "rules"; ui.error = ""; redrawCard(p, true); } }, "Always allow…")
          : null,
      ),
    );
  }

  function buildAskUser(card: HTMLElement, p: PauseView, ui: CardUi, open: boolean) {
    const dis = !open || ui.pending;
    if (!p.ask_user) {
      card.append(
        h("div", { class: "nbh-error", "data-testid": "nbh-askuser-invalid" }, "The agent's questions are invalid and cannot be shown as asked:\n" + (p.ask_user_error || "")),
        h("pre", { class: "nbh-pre" }, prettyJson(p.input_text)),
        errorBox(ui) || "",
        h("button", { class: "nbh-primary", "data-testid": "nbh-return-error", disabled: dis, onclick: () => send(p, "return_error") }, "Return this error to the agent"),
      );
      return;
    }
    const collectors: (() => { question: string; selected: string[]; other: string | null })[] = [];
    p.ask_user.questions.forEach((q, qi) => {
      const multi = q.multi_select === true; // AskUserParams: multi_select defaults to false (C08)
      const name = `nbh-${p.tool_call_id}-${qi}`;
      const qEl = h("fieldset", { class: "nbh-card", "data-testid": "nbh-question", "data-question": q.question });
      qEl.append(h("legend", {}, h("span", { class: "nbh-chip", "data-testid": "nbh-header" }, q.header), " ", h("span", { class: "nbh-title" }, q.question)));
      if (q.context) qEl.append(h("pre", { class: "nbh-pre", "data-testid": "nbh-context" }, q.context));
      const hasPreview = !multi && q.options.some((o) => o.preview);
      const preview = h("pre", { class: "nbh-pre nbh-preview", "data-testid": "nbh-preview" });
      const showPreview = (o?: Option) => {
        preview.textContent = o && o.preview ? o.preview : "";
        preview.hidden = !(o && o.preview);
      };
      showPreview(undefined);
      const optsEl = h("div", { class: "nbh-options" });
      const inputs: { input: HTMLInputElement; label: string }[] = [];
      for (const o of q.options) {
        const input = h("input", { type: multi ? "checkbox" : "radio", name, value: o.label, disabled: dis, "data-testid": "nbh-option-input" }) as HTMLInputElement;
        input.addEventListener("change", () => showPreview(o));
        input.addEventListener("focus", () => showPreview(o));
        inputs.push({ input, label: o.label });
        const label = h(
          "label",
          { class: "nbh-row", "data-testid": "nbh-option", "data-label": o.label },
          input,
          h("span", { class: "nbh-title" }, o.label),
          h("span", { class: "nbh-muted" }, o.description),
        );
        label.addEventListener("mouseenter", () => showPreview(o));
        optsEl.append(label);
      }
      const otherToggle = h("input", { type: multi ? "checkbox" : "radio", name, value: "__other__", disabled: dis, "data-testid": "nbh-other-toggle" }) as HTMLInputElement;
      const otherText = h("input", { type: "text", placeholder: "Other: your own answer", disabled: dis, "data-testid": "nbh-other-text", "aria-label": "Other answer" }) as HTMLInputElement;
      otherText.addEventListener("input", () => {
        if (otherText.value) otherToggle.checked = true;
      });
      optsEl.append(h("label", { class: "nbh-row" }, otherToggle, h("span", {}, "Other"), otherText));
      const kept = typed.get(p.tool_call_id);
      const keptAnswer = kept && kept.action === "answer" ? (kept.payload.answers as any[]).find((a) => a.question === q.question) : undefined;
      if (keptAnswer) {
        for (const i of inputs) i.input.checked = keptAnswer.selected.includes(i.label);
        if (keptAnswer.other) {
          otherToggle.checked = true;
          otherText.value = keptAnswer.other;
        }
        showPreview(q.options.find((o) => keptAnswer.selected.includes(o.label)));
      }
      const body = hasPreview ? h("div", { class: "nbh-row", style: "align-items:flex-start" }, h("div", { style: "flex:1" }, optsEl), h("div", { style: "flex:1" }, preview)) : optsEl;
      qEl.append(body, errorBox(ui, `answers.${qi}`) || "");
      card.append(qEl);
      collectors.push(() => ({
        question: q.question,
        selected: inputs.filter((i) => i.input.checked).map((i) => i.label),
        other: otherToggle.checked && otherText.value.trim() ? otherText.value : null,
      }));
    });
    drafts.set(p.tool_call_id, () => {
      const answers = collectors.map((c) => c());
      return answers.some((a) => a.selected.length || a.other) ? { action: "answer", payload: { answers } } : null;
    });
    const general = ui.errorField.startsWith("answers.") ? null : errorBox(ui);
    card.append(
      general || "",
      h(
        "div",
        { class: "nbh-row" },
        h("button", { class: "nbh-primary", "data-testid": "nbh-answer-submit", disabled: dis, onclick: () => send(p, "answer", { answers: collectors.map((c) => c()) }) }, "Submit answers"),
      ),
    );
  }

  function buildExternal(card: HTMLElement, p: PauseView, ui: CardUi, open: boolean) {
    const dis = !open || ui.pending;
    if (p.message) card.append(h("div", { class: "nbh-info" }, p.message));
    card.append(h("div", { class: "nbh-muted" }, `${p.tool_name} runs outside the agent. Run it, then give its output.`), h("pre", { class: "nbh-pre", "data-testid": "nbh-input" }, prettyJson(p.input_text)));
    const area = h("textarea", { "data-testid": "nbh-external-output", "aria-label": "Tool output", disabled: dis }) as HTMLTextAreaElement;
    if (p.review_output != null) area.value = p.review_output;
    const ok = h("input", { type: "radio", name: `nbh-state-${p.tool_call_id}`, value: "success", "data-testid": "nbh-state-success" }) as HTMLInputElement;
    const bad = h("input", { type: "radio", name: `nbh-state-${p.tool_call_id}`, value: "error", "data-testid": "nbh-state-error" }) as HTMLInputElement;
    ok.checked = true;
    const kept = typed.get(p.tool_call_id);
    if (kept && kept.action === "external_result") {
      area.value = String(kept.payload.output);
      bad.checked = kept.payload.state === "error";
      ok.checked = !bad.checked;
    }
    drafts.set(p.tool_call_id, () => (area.value ? { action: "external_result", payload: { output: area.value, state: bad.checked ? "error" : "success" } } : null));
    card.append(
      area,
      h("div", { class: "nbh-row" }, h("label", {}, ok, " success"), h("label", {}, bad, " error")),
      errorBox(ui) || "",
      h("button", { class: "nbh-primary", "data-testid": "nbh-external-submit", disabled: dis, onclick: () => send(p, "external_result", { output: area.value, state: bad.checked ? "error" : "success" }) }, "Send result"),
    );
  }

  // A reviewed tool's result, held back from the model until a person
  // accepts it, edits it (e.g. redacts a value) or rejects it (nb_hitl/review.py).
  function buildReview(card: HTMLElement, p: PauseView, ui: CardUi, open: boolean) {
    const dis = !open || ui.pending;
    if (p.message) card.append(h("div", { class: "nbh-info", "data-testid": "nbh-review-message" }, p.message));
    card.append(h("pre", { class: "nbh-pre", "data-testid": "nbh-input" }, prettyJson(p.input_text)));
    const reason = h("input", { type: "text", placeholder: "Reason (optional, the agent reads it)", disabled: dis, "data-testid": "nbh-review-reason", "aria-label": "Reason for rejecting" }) as HTMLInputElement;
    const reject = h("button", { class: "nbh-danger", "data-testid": "nbh-review-reject", disabled: dis, onclick: () => send(p, "reject", reason.value.trim() ? { reason: reason.value } : {}) }, "Reject");
    if (p.review_error || p.review_output == null) {
      card.append(
        h("div", { class: "nbh-error", "data-testid": "nbh-review-error" }, p.review_error || "There is no result to review."),
        errorBox(ui) || "",
        h("div", { class: "nbh-row" }, reject, reason),
      );
      return;
    }
    if (p.review_state && p.review_state !== "success") card.append(h("span", { class: "nbh-chip", "data-testid": "nbh-review-state" }, `state: ${p.review_state}`));
    const area = h("textarea", { "data-testid": "nbh-review-output", "aria-label": `Result of ${p.tool_name}`, spellcheck: "false", disabled: dis }) as HTMLTextAreaElement;
    area.value = p.review_output;
    const original = p.review_output;
    drafts.set(p.tool_call_id, () => (area.value === original ? { action: "accept", payload: {} } : { action: "edit", payload: { output: area.value } }));
    card.append(
      h("div", { class: "nbh-muted" }, "The model has not seen this result. Edit the text to change what it reads."),
      area,
      errorBox(ui, "output") || errorBox(ui) || "",
      h(
        "div",
        { class: "nbh-row" },
        h("button", { class: "nbh-primary", "data-testid": "nbh-review-accept", disabled: dis, onclick: () => send(p, "accept") }, "Accept"),
        h("button", { "data-testid": "nbh-review-edit", disabled: dis, onclick: () => send(p, "edit", { output: area.value }) }, "Edit & send"),
        reject,
        reason,
      ),
    );
  }

  function buildForm(card: HTMLElement, p: PauseView, ui: CardUi, open: boolean) {
    const dis = !open || ui.pending;
    if (p.message) card.append(h("div", { class: "nbh-info" }, p.message));
    if (p.form_error) {
      card.append(
        h("div", { class: "nbh-error", "data-testid": "nbh-form-invalid" }, "The agent's form cannot be shown: " + p.form_error),
        h("pre", { class: "nbh-pre" }, prettyJson(p.input_text)),
        errorBox(ui) || "",
        h("button", { class: "nbh-primary", "data-testid": "nbh-return-error", disabled: dis, onclick: () => send(p, "return_error") }, "Return this error to the agent"),
      );
      return;
    }
    const schema = p.response_schema || {};
    const form = renderSchemaForm(schema, { disabled: dis, errorField: ui.errorField, error: ui.error });
    // a refused answer redraws the card: put back what the person typed
    restoreFormValues(form.el, schema, formValues.get(p.tool_call_id));
    const remember = () => {
      const v = form.value();
      if (v.ok) formValues.set(p.tool_call_id, v.value);
      return v;
    };
    drafts.set(p.tool_call_id, () => {
      const v = remember();
      return v.ok && Object.keys(v.value || {}).length ? { action: "submit", payload: { value: v.value } } : null;
    });
    // an error the form already shows at its field is not repeated below
    const props = (schema && schema.properties) || {};
    const top = ui.errorField.startsWith("value.") ? ui.errorField.slice(6) : ui.errorField;
    const atField = top !== "" && Object.prototype.hasOwnProperty.call(props, top);
    card.append(
      form.el,
      atField ? "" : errorBox(ui) || "",
      h("button", { class: "nbh-primary", "data-testid": "nbh-form-submit", disabled: dis, onclick: () => {
        const value = remember();
        if (!value.ok) { ui.error = value.error; ui.errorField = value.field; redrawCard(p, true); return; }
        send(p, "submit", { value: value.value });
      } }, "Submit"),
    );
  }

  function restoreFormValues(formEl: HTMLElement, schema: any, values: Record<string, any> | undefined) {
    if (!values) return;
    const props: Record<string, any> = (schema && schema.properties) || {};
    for (const [name, v] of Object.entries(values)) {
      const input = Array.from(formEl.querySelectorAll<HTMLElement>("[data-field]")).find((e) => e.dataset.field === name);
      if (!input) continue;
      const p = props[name] || {};
      if (input instanceof HTMLSelectElement) {
        const i = Array.isArray(p.enum) ? p.enum.findIndex((x: any) => JSON.stringify(x) === JSON.stringify(v)) : -1;
        if (i >= 0) input.value = String(i);
      } else if (input instanceof HTMLInputElement && input.type === "checkbox") {
        input.checked = v === true;
      } else if (input instanceof HTMLInputElement && input.type === "datetime-local") {
        input.value = String(v).slice(0, 16);
      } else if (input instanceof HTMLInputElement || input instanceof HTMLTextAreaElement) {
        input.value = typeof v === "string" ? v : JSON.stringify(v);
      }
    }
  }

  // --------------------------------------------------------------- updates
  function drawFinal() {
    const text = String(model.get("final_text") || "");
    finalEl.textContent = "";
    if (text) finalEl.append(h("div", { class: "nbh-ok", "data-testid": "nbh-final-text" }, text));
    // The final message already streamed as the last text block: show it once.
    const entries = (model.get("transcript") as Entry[]) || [];
    const last = entries.filter((e) => e.kind === "text").pop();
    const lastEl = last ? entryEls.get(last.id) : undefined;
    if (lastEl) lastEl.el.hidden = !!text && last!.text.trim() === text.trim();
  }

  function drawAll() {
    drawHeader();
    drawTranscript();
    drawCards();
    drawFinal();
  }

  const onChange = () => drawAll();
  model.on("change:transcript", () => { drawTranscript(); drawCards(); });
  model.on("change:pauses", drawCards);
  model.on("change:status", () => { drawHeader(); drawCards(); });
  model.on("change:status_reason", drawHeader);
  model.on("change:final_text", drawFinal);
  model.on("change:agent_name", drawHeader);
  drawAll();

  timer = window.setInterval(() => {
    for (const span of Array.from(root.querySelectorAll<HTMLElement>("[data-deadline]"))) {
      span.textContent = timeLeft(Number(span.dataset.deadline));
    }
  }, 1000);

  isLive(rpc).then((ok) => {
    live = ok;
    root.dataset.live = String(ok);
    if (!ok) {
      showBanner("No longer live: the kernel that ran this reply has stopped or restarted. This is the saved record of what was pending or decided; nothing here can reach an agent.");
      drawAll();
      for (const ui of cards.values()) ui.key = "";
      drawCards();
    }
  });

  return () => {
    window.clearInterval(timer);
    rpc.dispose();
    void onChange;
  };
}

export default { render };
