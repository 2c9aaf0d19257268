// URL-mode elicitation (reply/cards/elicitation_url.ts): the address read as
// the browser would open it, shown as text with its host set apart, opened
// only by a click in a tab with no opener; Done and Decline go the one road
// of every answer (accept / decline), with nothing else.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { settle } from "./fake_model";
import { drawReply, pause } from "./page";
import { openPage, urlParts } from "../reply/cards/elicitation_url";
import { decisionText } from "../reply/record";

const dom = installDom();
after(() => dom.window.close());

describe("urlParts", () => {
  test("the host is cut out of the text as sent", () => {
    assert.deepEqual(urlParts("https://Accounts.Example.com/o/auth?x=1"), {
      ok: true,
      href: "https://accounts.example.com/o/auth?x=1",
      host: "accounts.example.com",
      before: "https://",
      hostText: "Accounts.Example.com",
      after: "/o/auth?x=1",
    });
    const port = urlParts("http://127.0.0.1:8765/done");
    assert.ok(port.ok && port.hostText === "127.0.0.1:8765" && port.after === "/done");
  });
  test("an international name shows in the browser's ASCII reading (look-alike letters show)", () => {
    const parts = urlParts("https://exаmple.com/login"); // a Cyrillic "а"
    assert.ok(parts.ok);
    assert.equal(parts.host, "xn--exmple-4nf.com");
    assert.equal(parts.hostText, ""); // the text as sent is shown whole; the host line says where it goes
    assert.equal(parts.before, "https://exаmple.com/login");
  });
  test("what is not offered says why", () => {
    const bad = (raw: string) => {
      const parts = urlParts(raw);
      return parts.ok ? "" : parts.error;
    };
    assert.match(bad("javascript:alert(1)"), /not a web address \(javascript:\)/);
    assert.match(bad("data:text/html,<b>x</b>"), /not a web address/);
    assert.match(bad("https://bank.example@evil.example/"), /user name or password/);
    assert.match(bad("not a url"), /cannot be read/);
    assert.match(bad(""), /cannot be read/);
  });
});

describe("openPage", () => {
  test("a new tab with no opener and no referrer", () => {
    const calls: unknown[][] = [];
    openPage({ open: (...args: unknown[]) => (calls.push(args), null) } as Pick<Window, "open">, "https://a.example/x");
    assert.deepEqual(calls, [["https://a.example/x", "_blank", "noopener,noreferrer"]]);
  });
});

const URL_ = 'https://login.example.com/<img src=x onerror="alert(1)">?next=/';

describe("the URL card", () => {
  test("the address is text, its host set apart; nothing opens until a click", async () => {
    const opened: unknown[][] = [];
    const saved = window.open;
    window.open = ((...args: unknown[]) => (opened.push(args), null)) as typeof window.open;
    try {
      const page = await drawReply([pause({ kind: "elicitation", tool_name: "mcp__db__sign_in", message: "Sign in.", elicitation_url: URL_ })]);
      const card = page.card("c1");
      assert.equal(card.querySelector("img"), null);
      assert.equal(card.querySelector('[data-testid="nbh-url"]')!.textContent, URL_);
      assert.equal(card.querySelector('[data-testid="nbh-url"] strong')!.textContent, "login.example.com");
      assert.equal(card.querySelector('[data-testid="nbh-url-host"]')!.textContent, "login.example.com");
      assert.equal(card.querySelector('[data-testid="nbh-elicitation-message"]')!.textContent, "Sign in.");
      assert.equal(card.querySelector("a"), null); // no link to follow by accident
      assert.deepEqual(opened, []);
      page.control("c1", "nbh-url-open")!.click();
      assert.deepEqual(opened, [[new URL(URL_).href, "_blank", "noopener,noreferrer"]]);
      assert.equal(page.fake.sent.filter((m) => m.action !== "sync").length, 0); // opening sends nothing
      page.control("c1", "nbh-url-done")!.click();
      await settle();
      const sent = page.fake.actions("accept");
      assert.deepEqual({ ...sent[0], request_id: "" }, { action: "accept", tool_call_id: "c1", reply_id: "r1", request_id: "" });
      page.close();
    } finally {
      window.open = saved;
    }
  });
  test("Decline sends decline", async () => {
    const page = await drawReply([pause({ kind: "elicitation", elicitation_url: "https://a.example/" })]);
    page.control("c1", "nbh-elicitation-decline")!.click();
    await settle();
    assert.equal(page.fake.actions("decline").length, 1);
    assert.equal(page.fake.actions("accept").length, 0);
    page.close();
  });
  test("an address the page will not open leaves Decline and Cancel, no Open", async () => {
    const page = await drawReply([pause({ kind: "elicitation", elicitation_url: "javascript:alert(1)" })]);
    assert.match(page.control("c1", "nbh-url-invalid")!.textContent!, /not a web address/);
    assert.equal(page.control("c1", "nbh-url-open"), null);
    assert.equal(page.control("c1", "nbh-url-done"), null);
    assert.ok(page.control("c1", "nbh-elicitation-cancel"));
    page.close();
  });
  test("the record says what the server was told, and keeps the address as text", async () => {
    const page = await drawReply([
      pause({ kind: "elicitation", status: "delivered", decision: { action: "accept" }, message: "Sign in.", elicitation_url: URL_ }),
    ]);
    assert.equal(page.control("c1", "nbh-decision")!.textContent, "Done: the MCP server was told you finished on its page");
    assert.equal(page.card("c1").querySelector('[data-testid="nbh-url"]')!.textContent, URL_);
    assert.equal(page.card("c1").querySelector("img"), null);
    assert.equal(page.control("c1", "nbh-url-open"), null);
    page.close();
    // a review's accept and a form's accept keep their own words
    assert.equal(decisionText({ action: "accept" }, { kind: "review" }), "Result accepted");
    assert.equal(decisionText({ action: "accept", content: { a: 1 } }, { kind: "elicitation" }), 'Accepted: sent to the MCP server {"a":1}');
  });
});
