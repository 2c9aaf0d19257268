// A confirmation's edit panels by keyboard (the keyboard lands in each panel's
// first field and goes back to its opener on Cancel / Escape), and a saved
// card whose kernel is gone says nothing false (no announced need, no Notify,
// no "still waits").
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { settle } from "./fake_model";
import { drawReply, pause } from "./page";

const dom = installDom();
after(() => dom.window.close());

const rule = { index: 0, label: "Bash(ls:*)", tool_name: "Bash", rule_content: "ls:*", behavior: "allow", reach: "any ls command" };
// a file diff puts its "Side by side" toggle first in the card: the keyboard must not land there
const fileChange = { path: "/w/notes.txt", diff: "--- a\n+++ b\n@@ -1 +0,0 @@\n-hello\n", sha256_before: null, note: null };
const active = () => (document.activeElement as HTMLElement | null)?.dataset.testid ?? null;

describe("the edit panels of a confirmation, by keyboard", () => {
  for (const [opener, field, cancel] of [
    ["nbh-deny-reason-open", "nbh-deny-reason", "nbh-deny-cancel"],
    ["nbh-always", "nbh-rule", "nbh-rules-cancel"],
    ["nbh-modify", "nbh-modify-input", "nbh-modify-cancel"],
  ]) {
    test(`${opener} opens with the keyboard in ${field}; Cancel and Escape go back to ${opener}`, async () => {
      const page = await drawReply([pause({ suggested_rules: [rule], file_change: fileChange })]);
      page.control("c1", opener)!.focus();
      page.control("c1", opener)!.click();
      assert.equal(active(), field);
      // the first of its kind: the panel's first field
      assert.equal(document.activeElement, page.card("c1").querySelector(`[data-testid="${field}"]`));
      page.control("c1", cancel)!.click();
      assert.equal(active(), opener);
      page.control("c1", opener)!.click();
      document.activeElement!.dispatchEvent(new dom.window.KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
      assert.equal(active(), opener);
      page.close();
    });
  }

  test("a reason typed in the deny panel is the reason sent", async () => {
    const page = await drawReply([pause({ file_change: fileChange })]);
    page.control("c1", "nbh-deny-reason-open")!.click();
    (document.activeElement as HTMLTextAreaElement).value = "keep my notes";
    page.control("c1", "nbh-deny-submit")!.click();
    await settle();
    assert.equal(page.fake.actions("deny")[0].reason, "keep my notes");
    page.close();
  });
});

describe("the notebook's shortcuts", () => {
  test("every control that takes the focus in the reply carries data-lm-suppress-shortcuts (Lumino tests the target first)", async () => {
    const page = await drawReply([pause({ file_change: fileChange })]);
    assert.equal(page.el.querySelector('[data-testid="nbh-reply"]')!.getAttribute("data-lm-suppress-shortcuts"), "true");
    for (const testid of ["nbh-approve", "nbh-deny-reason-open"]) assert.equal(page.control("c1", testid)!.hasAttribute("data-lm-suppress-shortcuts"), false);
    page.control("c1", "nbh-deny-reason-open")!.focus();
    assert.equal(page.control("c1", "nbh-deny-reason-open")!.getAttribute("data-lm-suppress-shortcuts"), "true");
    // a control drawn later (the reason field of the redrawn card) too
    page.control("c1", "nbh-deny-reason-open")!.click();
    assert.equal(page.control("c1", "nbh-deny-reason")!.getAttribute("data-lm-suppress-shortcuts"), "true");
    page.card("c1").focus();
    assert.equal(page.card("c1").getAttribute("data-lm-suppress-shortcuts"), "true");
    page.close();
  });
});

describe("a saved card whose kernel is gone", () => {
  const gone = () => {
    throw new Error("the comm is closed");
  };

  test("no announced need, Notify disabled, no 'still waits' under Dry run", async () => {
    // a browser that can notify (jsdom has no Notification of its own)
    const can = { Notification: class {
      static permission = "default";
    } };
    Object.assign(window, can);
    Object.assign(globalThis, can);
    const page = await drawReply([pause({ tool_name: "delete_file", dry_run: true })], {}, gone);
    assert.equal(page.status(), "not live");
    const announced = page.el.querySelector('[data-testid="nbh-announce"]')!.textContent || "";
    assert.doesNotMatch(announced, /Needs your confirmation/);
    assert.equal(page.el.querySelector<HTMLButtonElement>('[data-testid="nbh-notify"]')!.disabled, true);
    // held (aria-disabled, still focusable) while the kernel is not live: card_live.ts
    assert.equal(page.control("c1", "nbh-dry-run")!.getAttribute("aria-disabled"), "true");
    const part = page.control<HTMLElement>("c1", "nbh-dry-run-part")!.textContent || "";
    assert.doesNotMatch(part, /still waits/);
    assert.match(part, /not live/);
    page.close();
    delete (window as unknown as Partial<typeof can>).Notification;
    delete (globalThis as unknown as Partial<typeof can>).Notification;
  });

  test("a live kernel's card is announced once the kernel answers", async () => {
    const page = await drawReply([pause({ tool_name: "delete_file" })]);
    assert.equal(page.el.querySelector('[data-testid="nbh-announce"]')!.textContent, "Needs your confirmation: delete_file");
    page.close();
  });
});

describe("Notify me in a browser that blocks notifications", () => {
  test("the click says why nothing was turned on, beside the button", async () => {
    const blocked = { Notification: class {
      static permission = "denied";
      static requestPermission = async () => "denied";
    } };
    Object.assign(window, blocked);
    Object.assign(globalThis, blocked);
    const page = await drawReply([pause({ tool_name: "delete_file" })]);
    const button = () => page.el.querySelector<HTMLButtonElement>('[data-testid="nbh-notify"]')!;
    const said = () => page.el.querySelector('[data-testid="nbh-notify-blocked"]');
    assert.equal(said(), null, "nothing said before the person asks");
    button().click();
    await settle();
    assert.equal(button().textContent, "Notify me");
    assert.match(said()?.textContent || "", /This browser blocks notifications for this page: allow them in its site settings/);
    page.close();
    delete (window as unknown as Partial<typeof blocked>).Notification;
    delete (globalThis as unknown as Partial<typeof blocked>).Notification;
  });
});
