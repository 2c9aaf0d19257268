// The recorded log replayed against rules (the kernel runs
// nb_hitl.audit.replay on AgentScope's own engine and keeps the whole result):
// how many recorded calls would be decided otherwise, each change, calls a
// person denied that these rules allow, and the rules that never fired. The
// button replays against the rules shown; the candidate box replays against
// rules typed there, again as the person types (debounced here; a newer replay
// cancels an older one in the kernel). Rows come one page at a time; the
// candidate can be taken away as a rules file. Shown only when the explorer
// was opened with a log (explore(agent, history=path)).
import { h, clear } from "../lib/dom";
import type { ReplayPage, ReplayResult } from "../messages";
import { MODES_FALLBACK } from "./header";
import type { Section } from "./channel";
import { badge } from "./rule_list";

/** Milliseconds of quiet typing before the candidate is replayed. */
export const REPLAY_DEBOUNCE_MS = 400;

export function replaySection({ model, act }: Section) {
  const button = h("button", { class: "nbh-primary", "data-testid": "perm-replay-btn" }, "Replay the recorded log against these rules");
  const candidate = h("textarea", { class: "perm-short", "data-testid": "perm-replay-rules", spellcheck: "false",
    "aria-label": "candidate rules",
    placeholder: "candidate rules: a rules file (JSON list of PermissionRule objects); the log is replayed as you type" }) as HTMLTextAreaElement;
  const fromAgent = h("button", { "data-testid": "perm-replay-from-agent" }, "Start from the rules shown");
  const modeSelect = h("select", { "data-testid": "perm-replay-mode", "aria-label": "candidate mode" }) as HTMLSelectElement;
  const exportBtn = h("button", { "data-testid": "perm-replay-export" }, "Export this candidate as a rules file");
  const download = h("a", { "data-testid": "perm-replay-download", hidden: true, download: "candidate_rules.json" }, "download") as HTMLAnchorElement;
  const error = h("div", { class: "nbh-error", "data-testid": "perm-replay-error", hidden: true });
  const box = h("div", { "data-testid": "perm-replay" });
  const onlyChanged = h("input", { type: "checkbox", "data-testid": "perm-replay-only-changed", checked: true }) as HTMLInputElement;
  const prev = h("button", { "data-testid": "perm-replay-prev" }, "previous");
  const next = h("button", { "data-testid": "perm-replay-next" }, "next");
  const where = h("span", { class: "nbh-muted", "data-testid": "perm-replay-where" });
  const pager = h("div", { class: "nbh-row", "data-testid": "perm-replay-pager", hidden: true },
    prev, next, where, h("label", { class: "nbh-muted" }, onlyChanged, " only the calls that change"));
  const rowsBox = h("div", {});
  const title = h("h4", {});
  const el = h("section", { "data-testid": "perm-replay-section" }, title,
    h("div", { class: "nbh-row" }, button, fromAgent, modeSelect, exportBtn, download),
    candidate, error, box, pager, rowsBox);

  let page: ReplayPage | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const replayCandidate = () => {
    timer = undefined;
    void act("replay", { rules: candidate.value, mode: modeSelect.value }, error);
  };
  const later = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(replayCandidate, REPLAY_DEBOUNCE_MS);
  };

  button.addEventListener("click", () => {
    void act("replay", {}, error);
  });
  candidate.addEventListener("input", later);
  modeSelect.addEventListener("change", () => {
    if (candidate.value.trim()) later();
  });
  fromAgent.addEventListener("click", async () => {
    const reply = await act("export", {}, error);
    if (!reply) return;
    candidate.value = reply.text;
    replayCandidate();
  });
  exportBtn.addEventListener("click", async () => {
    const reply = await act("replay_export", {}, error);
    if (!reply) return;
    if (download.href) URL.revokeObjectURL(download.href);
    download.href = URL.createObjectURL(new Blob([reply.text], { type: "application/json" }));
    download.setAttribute("data-text", reply.text);
    download.hidden = false;
  });

  async function turn(offset: number): Promise<void> {
    const reply = await act("replay_page", { offset, only_changed: onlyChanged.checked }, error);
    if (reply) {
      page = reply.page;
      renderRows();
    }
  }
  prev.addEventListener("click", () => {
    if (page) void turn(Math.max(0, page.offset - page.limit));
  });
  next.addEventListener("click", () => {
    if (page) void turn(page.offset + page.rows.length);
  });
  onlyChanged.addEventListener("change", () => void turn(0));

  function renderModes(): void {
    const modes: string[] = (model.get("context_view") || {}).modes || MODES_FALLBACK;
    const current = modeSelect.value;
    clear(modeSelect);
    modeSelect.append(h("option", { value: "" }, "mode: as shown"));
    for (const m of modes) modeSelect.append(h("option", { value: m }, `mode: ${m}`));
    modeSelect.value = modes.includes(current) ? current : "";
  }

  function renderRows(): void {
    clear(rowsBox);
    pager.hidden = !page;
    if (!page) return;
    const first = page.total ? page.offset + 1 : 0;
    where.textContent = `${first}–${page.offset + page.rows.length} of ${page.total}`;
    prev.toggleAttribute("disabled", page.offset === 0);
    next.toggleAttribute("disabled", page.offset + page.rows.length >= page.total);
    if (!page.rows.length) return;
    const table = h("table", { class: "nbh-table" });
    table.append(h("tr", {}, h("th", {}, "#"), h("th", {}, "call"), h("th", {}, "recorded"), h("th", {}, "person"), h("th", {}, "these rules")));
    for (const row of page.rows) {
      table.append(h("tr", { "data-testid": "perm-replay-row", "data-index": String(row.index), "data-change": row.change, "data-denied-now-allowed": String(row.denied_now_allowed) },
        h("td", {}, String(row.index + 1)),
        h("td", {}, h("code", {}, `${row.tool_name} ${row.input_text}`)),
        h("td", {}, badge(row.recorded)),
        h("td", {}, row.person || "not asked", row.denied_now_allowed ? h("span", { class: "nbh-chip" }, "denied, now allowed") : null),
        h("td", {}, badge(row.candidate), row.problem ? h("div", { class: "nbh-error" }, row.problem) : null)));
    }
    rowsBox.append(table);
  }

  function render(): void {
    const name = model.get("history_name") || "";
    el.hidden = !name;
    title.textContent = `Replay of the recorded log ${name}`;
    renderModes();
    const r = (model.get("replay") || {}) as ReplayResult | Record<string, never>;
    clear(box);
    if (!("calls" in r)) {
      page = null;
      renderRows();
      return;
    }
    const rules = r.source === "agent" ? `the rules shown, ${r.rule_count}` : `the candidate rules, ${r.rule_count}`;
    box.append(
      h("div", { "data-testid": "perm-replay-summary" },
        `${r.changed} of ${r.calls} recorded calls would be decided otherwise (mode ${r.mode}).`),
      h("div", { class: "nbh-muted", "data-testid": "perm-replay-source", "data-source": r.source },
        `Replayed against ${rules}; ${r.denied_now_allowed} call(s) a person denied would be allowed.`));
    if (r.never_fired.length) {
      const more = r.never_fired_count > r.never_fired.length ? ` and ${r.never_fired_count - r.never_fired.length} more` : "";
      box.append(h("div", { "data-testid": "perm-replay-never" }, `Never fired: ${r.never_fired.join(", ")}${more}`));
    }
    if (!page || page.run !== r.run) {
      if (onlyChanged.checked) page = r.page;
      else void turn(0);
    }
    renderRows();
  }

  /** Stop a pending replay and let go of the download's object URL. */
  function dispose(): void {
    if (timer !== undefined) clearTimeout(timer);
    if (download.href) URL.revokeObjectURL(download.href);
  }
  return { el, render, dispose };
}
