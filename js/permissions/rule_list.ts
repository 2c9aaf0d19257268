// The permission explorer's rule list, paginated: an agent may hold tens of
// thousands of rules (an imported rules file), and building a row for each
// would stall the page for seconds. Only one page of rows is in the DOM; a
// filter narrows the list (substring of the rule's label, case-insensitive).
// Rows are grouped by tool, in the engine's order (deny, then ask, then allow).
// Rule text reaches the page only through h() / textContent.
import { h, clear } from "../lib/dom";

import type { RuleDict } from "../messages";

export type Rule = RuleDict;

export const PAGE_SIZE = 100;

export function ruleText(r: Rule): string {
  return r.label || (r.rule_content === null ? `${r.behavior} ${r.tool_name}` : `${r.behavior} ${r.tool_name}(${r.rule_content})`);
}

export function badge(behavior: string, testid?: string): HTMLElement {
  return h("span", { class: `perm-b perm-b-${behavior}`, "data-testid": testid, "data-behavior": behavior }, behavior);
}

/** Rules in the engine's order (deny, ask, allow), grouped by tool, keeping that order in each group. */
export function groupByTool(rules: Rule[]): Record<string, Rule[]> {
  const out: Record<string, Rule[]> = {};
  for (const r of rules) (out[r.tool_name] ||= []).push(r);
  return out;
}

export type RuleListOptions = {
  onRemove: (r: Rule) => void;
  onEdit: (r: Rule) => void;
};

export class RuleList {
  readonly el: HTMLElement;
  private all: Rule[] = [];
  private shown: Rule[] = [];
  private page = 0;
  private readonly body: HTMLElement;
  private readonly filter: HTMLInputElement;
  private readonly range: HTMLElement;
  private readonly prev: HTMLButtonElement;
  private readonly next: HTMLButtonElement;
  private readonly pager: HTMLElement;

  constructor(private readonly opts: RuleListOptions) {
    this.body = h("div", {});
    this.filter = h("input", { type: "search", "data-testid": "perm-rules-filter", placeholder: "filter rules", size: 24 }) as HTMLInputElement;
    this.range = h("span", { class: "nbh-muted", "data-testid": "perm-rules-range" });
    this.prev = h("button", { "data-testid": "perm-rules-prev", title: "Previous page of rules" }, "‹ Prev") as HTMLButtonElement;
    this.next = h("button", { "data-testid": "perm-rules-next", title: "Next page of rules" }, "Next ›") as HTMLButtonElement;
    this.pager = h("div", { class: "nbh-row", "data-testid": "perm-rules-pager" }, this.filter, this.prev, this.next, this.range);
    this.el = h("div", { "data-testid": "perm-rules" }, this.pager, this.body);
    let timer: number | undefined;
    this.filter.addEventListener("input", () => {
      window.clearTimeout(timer);
      timer = window.setTimeout(() => { this.page = 0; this.applyFilter(); this.render(); }, 120);
    });
    this.prev.addEventListener("click", () => this.go(this.page - 1));
    this.next.addEventListener("click", () => this.go(this.page + 1));
  }

  /** Replace the rules (``by_tool`` of the context view); keeps the page when it still exists. */
  setRules(byTool: Record<string, Rule[]>): void {
    const all: Rule[] = [];
    for (const name of Object.keys(byTool).sort()) for (const r of byTool[name]) all.push(r);
    this.all = all;
    this.applyFilter();
    this.render();
  }

  private applyFilter(): void {
    const q = this.filter.value.trim().toLowerCase();
    this.shown = q ? this.all.filter((r) => ruleText(r).toLowerCase().includes(q) || r.source.toLowerCase().includes(q)) : this.all;
  }

  private pages(): number {
    return Math.max(1, Math.ceil(this.shown.length / PAGE_SIZE));
  }

  private go(page: number): void {
    this.page = Math.min(Math.max(0, page), this.pages() - 1);
    this.render();
  }

  private render(): void {
    clear(this.body);
    this.page = Math.min(this.page, this.pages() - 1);
    const total = this.all.length;
    this.pager.hidden = total <= PAGE_SIZE && !this.filter.value;
    if (!total) {
      this.body.append(h("div", { class: "nbh-muted", "data-testid": "perm-no-rules" }, "No rules: every call follows the mode."));
      return;
    }
    const start = this.page * PAGE_SIZE;
    const slice = this.shown.slice(start, start + PAGE_SIZE);
    const of = this.shown.length === total ? `${total.toLocaleString("en")}` : `${this.shown.length.toLocaleString("en")} matching (of ${total.toLocaleString("en")})`;
    this.range.textContent = slice.length ? `rules ${(start + 1).toLocaleString("en")}–${(start + slice.length).toLocaleString("en")} of ${of}` : `no rule matches (of ${total.toLocaleString("en")})`;
    this.prev.disabled = this.page === 0;
    this.next.disabled = this.page >= this.pages() - 1;
    this.el.setAttribute("data-page", String(this.page));
    let table: HTMLElement | null = null;
    let tool = "";
    for (let i = 0; i < slice.length; i++) {
      const r = slice[i];
      if (table === null || r.tool_name !== tool) {
        tool = r.tool_name;
        const continued = i === 0 && start > 0 && this.shown[start - 1].tool_name === tool;
        table = h("table", { class: "nbh-table", "data-testid": "perm-tool-rules", "data-tool": tool },
          h("tr", {}, h("th", { colspan: 4 }, continued ? `${tool} (continued)` : tool)));
        this.body.append(table);
      }
      table.append(this.row(r));
    }
  }

  private row(r: Rule): HTMLElement {
    const removeBtn = h("button", { class: "nbh-danger", "data-testid": "perm-remove-rule", title: "Remove this rule" }, "Remove");
    const editBtn = h("button", { "data-testid": "perm-edit-rule" }, "Edit");
    removeBtn.addEventListener("click", () => this.opts.onRemove(r));
    editBtn.addEventListener("click", () => this.opts.onEdit(r));
    return h("tr", { "data-testid": "perm-rule", "data-label": ruleText(r), "data-behavior": r.behavior },
      h("td", {}, badge(r.behavior)),
      h("td", {}, h("code", {}, r.rule_content === null ? `${r.tool_name} (whole tool)` : `${r.tool_name}(${r.rule_content})`)),
      h("td", { class: "nbh-muted" }, `source: ${r.source}`),
      h("td", {}, editBtn, " ", removeBtn));
  }
}
