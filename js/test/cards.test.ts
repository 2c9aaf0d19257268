// The pause cards (reply/card.ts, reply/cards/*): what each kind offers,
// what a click sends, the decided record and the group actions; drawn by the
// reply widget's own render over a fake kernel.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { installDom } from "./dom";
import { settle } from "./fake_model";
import { drawReply, liveKernel, pause, type Page } from "./page";
import { approvalsLine, approvalsRecord, confirmOffers } from "../reply/cards/confirm";
import { bulkActions, cardFor, kindLabel } from "../reply/cards/index";
import { clip, decisionText, MAX_SHOWN_CHARS } from "../reply/record";
import { visibleText } from "../lib/visible";

const dom = installDom();
after(() => dom.window.close());

const rule = { index: 0, label: "Bash(ls:*)", tool_name: "Bash", rule_content: "ls:*", behavior: "allow", reach: "any ls command" };

describe("what a confirmation offers", () => {
  test("a view without decisions offers everything", () => {
    assert.deepEqual(confirmOffers({ decisions: [], suggested_rules: [rule] }), {
      approve: true,
      modify: true,
      alwaysAllow: true,
      alwaysDeny: true,
      always: "Always allow / deny…",
    });
  });
  test("Session(decisions=...) narrows the buttons", () => {
    const o = confirmOffers({ decisions: ["approve", "deny", "always_deny"], suggested_rules: [rule] });
    assert.deepEqual([o.approve, o.modify, o.alwaysAllow, o.always], [true, false, false, "Always deny…"]);
    assert.equal(confirmOffers({ decisions: ["deny", "always_allow"], suggested_rules: [rule] }).always, "Always allow…");
  });
  test("no suggested rules: no Always button", () => {
    assert.equal(confirmOffers({ decisions: [], suggested_rules: [] }).always, null);
  });
});

describe("approvals of a call that needs several", () => {
  test("one person decides: no line; M of N: who and when, an edit says so", () => {
    assert.equal(approvalsLine(pause({ tool_call_id: "c1" })), null);
    assert.equal(
      approvalsLine(pause({ tool_call_id: "c1", approvals_needed: 2 })),
      "0 of 2 approvals so far; each must come from a different person.",
    );
    const line = approvalsLine(pause({ tool_call_id: "c1", approvals_needed: 3, approvals: [{ by: "alice", at: 0, action: "modify" }] }));
    assert.match(line!, /^1 of 3 approvals: alice \(edited the input\) \(.+\)$/);
  });
});

describe("when an approval was given", () => {
  test("its time names its zone, as the approval link's page does", () => {
    const at = 1_800_000_127; // 2027-01-15 08:02:07 UTC
    const approvals = [{ by: "alice", at, action: "approve" }];
    const shown = () => approvalsLine(pause({ tool_call_id: "c1", approvals_needed: 2, approvals }))!;
    const zone = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" }).formatToParts(new Date(at * 1000));
    assert.ok(shown().endsWith(`${zone.find((x) => x.type === "timeZoneName")!.value})`), shown());
    const prior = process.env.TZ;
    process.env.TZ = "UTC"; // a page in UTC says so
    try {
      // 24-hour, as every time on the page (lib/clock.ts); another day than today names its date
      assert.equal(shown(), "1 of 2 approvals: alice (15 Jan 2027, 08:02:07 UTC)");
    } finally {
      if (prior === undefined) delete process.env.TZ;
      else process.env.TZ = prior;
    }
  });
});

describe("the approvals on a closed card", () => {
  test("one person decides: nothing; a last answer heard of elsewhere is named without a time", () => {
    assert.equal(approvalsRecord(pause({ status: "delivered", decision: { action: "approve" } })), null);
    const caught = pause({
      status: "delivered",
      approvals_needed: 2,
      approvals: [{ by: "alice", at: 0, action: "approve" }],
      decision: { action: "approve", by: "bob" },
    });
    assert.match(approvalsRecord(caught)!, /^2 of 2 approvals: alice \(.+\), bob\.$/);
    const markup = pause({ status: "expired", approvals_needed: 2, approvals: [{ by: "<b>x</b>", at: 0, action: "approve" }] });
    assert.match(approvalsRecord(markup)!, /^1 of 2 approvals: <b>x<\/b> \(.+\)\.$/);
  });
});

describe("the card registry", () => {
  test("labels per kind, open and closed; an unknown kind shows its name", () => {
    assert.equal(kindLabel("confirm", true), "Needs your confirmation");
    assert.equal(kindLabel("confirm", false), "Confirmation");
    assert.equal(kindLabel("form", true), "The agent asks for input");
    assert.equal(kindLabel("weird", true), "weird");
    assert.equal(cardFor("weird"), cardFor("external"));
  });
  test("group actions: Approve all / Deny all, for confirmations", () => {
    assert.deepEqual(
      bulkActions().map((b) => [b.kind, b.action]),
      [
        ["confirm", "approve"],
        ["confirm", "deny"],
      ],
    );
  });
});

describe("decisionText", () => {
  test("each decision says what happened", () => {
    assert.equal(decisionText({ action: "approve" }), "Approved");
    assert.equal(decisionText({ action: "approve", accepted_rules: ["allow Bash(ls:*)"] }), "Approved, with rules: allow Bash(ls:*)");
    assert.equal(decisionText({ action: "deny" }), "Denied");
    assert.equal(
      decisionText({ action: "deny", denied_rules: ["deny delete_file", "deny Bash(rm:*)"] }),
      "Denied, with rules: deny delete_file, deny Bash(rm:*)",
    );
    assert.equal(decisionText({ action: "deny", cause: "timeout" }), "Not answered before the deadline: did not run");
    assert.equal(decisionText({ action: "deny", cause: "cancelled" }), "Cancelled without an answer: did not run");
    assert.equal(decisionText({ action: "modify", edited_input: { a: 1 } }), "Approved with modified input (below)");
    assert.equal(decisionText({ action: "modify" }), "Approved with modified input");
    assert.equal(decisionText({ action: "modify", edited_input: { a: 1 }, edited_input_text: '{"a": 1}' }), "Approved with modified input (below)");
    assert.equal(decisionText({ action: "answer", answers: [{ question: "Which?", selected: ["A"], other: "B" }] }), 'Answered: Which? → A, "B"');
    assert.equal(decisionText({ action: "timeout", applied: "denied" }), "Deadline passed: denied");
    assert.equal(decisionText(null), "Decided");
  });
  test("clip keeps a huge input readable", () => {
    assert.equal(clip("abc"), "abc");
    const long = clip("x".repeat(MAX_SHOWN_CHARS + 5));
    assert.ok(long.endsWith("… (5 more characters not shown)"));
  });
});

describe("cards drawn", () => {
  test("a confirmation: its input as text, its buttons, and Approve sends approve for this call", async () => {
    const page = await drawReply([pause({ input_text: '{"command": "<img src=x onerror=alert(1)>"}', suggested_rules: [rule] })]);
    const card = page.card("c1");
    assert.equal(card.dataset.kind, "confirm");
    assert.equal(card.querySelector("img"), null);
    assert.match(page.control("c1", "nbh-input")!.textContent!, /<img src=x/);
    for (const testid of ["nbh-approve", "nbh-deny", "nbh-modify", "nbh-always"]) assert.ok(page.control("c1", testid), testid);
    assert.equal(page.status(), "waiting for you");
    page.control("c1", "nbh-approve")!.click();
    await settle();
    const sent = page.fake.actions("approve");
    assert.equal(sent.length, 1);
    assert.deepEqual({ ...sent[0], request_id: "" }, { action: "approve", tool_call_id: "c1", reply_id: "r1", request_id: "" });
    page.close();
  });

  test("a declined question reads as declined, an external call's error as an error", () => {
    const declined = { action: "return_error" };
    assert.equal(decisionText(declined, { kind: "ask_user" }), "Declined: the agent was told you did not answer");
    assert.equal(decisionText(declined, { kind: "form" }), "Declined: the agent was told you did not answer");
    assert.equal(decisionText(declined, { kind: "external" }), "Error returned to the agent");
  });

  test("an ask no allow rule can skip says so, whether a safety check or a policy asked", async () => {
    const page = await drawReply([pause({ bypass_immune: true, policy: "four eyes" }), pause({ tool_call_id: "c2" })]);
    const chip = page.control("c1", "nbh-immune")!;
    assert.equal(chip.textContent, "allow rules cannot skip this");
    assert.match(chip.getAttribute("title")!, /a safety check of the tool, or a policy/i);
    assert.equal(page.control("c2", "nbh-immune"), null);
    page.close();
  });

  test("a click leaves before its card is redrawn; answered, the card stays Sending… until the kernel's card", async () => {
    // a Session sends the card after the agent's next event and says so (nb_hitl/session/_core.py, _push_soon)
    let page: Page | undefined;
    let drawnAtSend: string | undefined;
    page = await drawReply([pause()], {}, (m) => {
      if (m.action === "approve") drawnAtSend = page!.card("c1").textContent || "";
      return m.action === "approve" ? { status: "decided", card_follows: true } : liveKernel(m);
    });
    page.control("c1", "nbh-approve")!.click();
    assert.ok(drawnAtSend !== undefined && !drawnAtSend.includes("Sending…"), "sent before the card said Sending…");
    await settle();
    // answered "decided", the card is not open again for a moment: still Sending…, buttons off
    assert.equal(page.card("c1").dataset.status, "open");
    assert.match(page.card("c1").textContent!, /Sending…/);
    assert.equal(page.control("c1", "nbh-approve")!.disabled, true);
    page.fake.emit({ type: "nbh_cards", seq: 1, ops: [{ op: "card", view: pause({ status: "delivered", decision: { action: "approve" } }) }] });
    assert.equal(page.card("c1").dataset.status, "delivered");
    assert.doesNotMatch(page.card("c1").textContent!, /Sending…/);
    page.close();
    // an owner that does not say its card follows: the card is drawn from the view it has
    const plain = await drawReply([pause()]);
    plain.control("c1", "nbh-approve")!.click();
    await settle();
    assert.doesNotMatch(plain.card("c1").textContent!, /Sending…/);
    plain.close();
  });

  test("Approve refused (ambiguous arguments): the button is disabled and says why", async () => {
    const page = await drawReply([pause({ approve_refused: "Two JSON objects were sent." })]);
    assert.equal(page.control("c1", "nbh-approve")!.disabled, true);
    assert.equal(page.control("c1", "nbh-approve-refused")!.textContent, "Two JSON objects were sent.");
    page.close();
  });

  test("a refusal from the kernel is shown on the card, and the card can be answered again", async () => {
    const page = await drawReply([pause()], {}, (m) => (m.action === "deny" ? { refuse: "Already decided." } : m.action === "sync" ? { transcript: { seq: 0, current: true }, cards: { seq: 0, current: true } } : null));
    page.control("c1", "nbh-deny")!.click();
    await settle();
    assert.equal(page.control("c1", "nbh-error")!.textContent, "Already decided.");
    assert.equal(page.control("c1", "nbh-deny")!.disabled, false);
    page.close();
  });

  test("an AskUser card sends the picked options", async () => {
    const ask_user = {
      questions: [{ question: "Which file?", header: "File", options: [{ label: "a.txt", description: "" }, { label: "b.txt", description: "" }] }],
    };
    const page = await drawReply([pause({ kind: "ask_user", tool_name: "AskUser", ask_user })]);
    const inputs = page.card("c1").querySelectorAll<HTMLInputElement>('[data-testid="nbh-option-input"]');
    assert.equal(inputs[0].type, "radio", "multi_select defaults to false (C08)");
    inputs[1].checked = true;
    page.control("c1", "nbh-answer-submit")!.click();
    await settle();
    assert.deepEqual(page.fake.actions("answer")[0].answers, [{ question: "Which file?", selected: ["b.txt"], other: null }]);
    page.close();
  });

  test("Decline with typed Other text asks which is meant, and can send the text as the reason (C34)", async () => {
    const ask_user = {
      questions: [{ question: "Which file?", header: "File", options: [{ label: "a.txt", description: "" }, { label: "b.txt", description: "" }] }],
    };
    const page = await drawReply([pause({ kind: "ask_user", tool_name: "AskUser", ask_user })]);
    const other = page.control("c1", "nbh-other-text") as HTMLInputElement;
    other.value = "neither, keep both";
    other.dispatchEvent(new Event("input"));
    page.control("c1", "nbh-decline")!.click();
    await settle();
    assert.equal(page.fake.actions("return_error").length, 0, "nothing is sent before the person says which is meant");
    const asked = page.control<HTMLElement>("c1", "nbh-ask-first")!;
    assert.equal(asked.hidden, false);
    assert.match(asked.textContent!, /"neither, keep both".*Decline to answer does not send it/);
    page.control("c1", "nbh-decline-with-text")!.click();
    await settle();
    assert.deepEqual(
      page.fake.actions("return_error").map((m) => m.message),
      ['The user declined to answer these questions, and wrote:\n- "Which file?": neither, keep both'],
    );
    page.close();
  });

  test("Decline with nothing typed declines at once", async () => {
    const ask_user = { questions: [{ question: "Which file?", header: "File", options: [{ label: "a.txt", description: "" }] }] };
    const page = await drawReply([pause({ kind: "ask_user", tool_name: "AskUser", ask_user })]);
    page.control("c1", "nbh-decline")!.click();
    await settle();
    assert.equal(page.fake.actions("return_error")[0].message, "The user declined to answer these questions.");
    page.close();
  });

  test("an invalid AskUser card shows the error and the input cut to the shown size (a 2 MB label)", async () => {
    const label = "L".repeat(2_000_000);
    const error = "questions.0.options.0.label: 2,000,000 characters, longer than an answer can carry back (at most 20,000)";
    const input_text = JSON.stringify({ questions: [{ question: "Pick?", header: "Pick", options: [{ label }] }] });
    const page = await drawReply([pause({ kind: "ask_user", tool_name: "AskUser", ask_user: null, ask_user_error: error, input_text })]);
    assert.ok(page.control("c1", "nbh-askuser-invalid")!.textContent!.endsWith(error));
    const shown = page.control("c1", "nbh-askuser-input")!.textContent!;
    assert.equal(shown, clip(input_text));
    assert.ok(shown.length < MAX_SHOWN_CHARS + 100 && shown.endsWith(`(${input_text.length - MAX_SHOWN_CHARS} more characters not shown)`));
    assert.equal(page.control("c1", "nbh-option-input"), null, "nothing to pick: the call can only return its error");
    assert.ok(page.control("c1", "nbh-return-error"));
    page.close();
  });

  test("an AskUser refusal goes once the question has an answer (an option, or Other with text)", async () => {
    const ask_user = {
      questions: [{ question: "Which file?", header: "File", options: [{ label: "a.txt", description: "" }, { label: "b.txt", description: "" }] }],
    };
    const refusal = "Choose an option for 'Which file?' or write an answer.";
    const sync = { transcript: { seq: 0, current: true }, cards: { seq: 0, current: true } };
    const page = await drawReply([pause({ kind: "ask_user", tool_name: "AskUser", ask_user })], {}, (m) =>
      m.action === "answer" ? { refuse: refusal, field: "answers.0" } : m.action === "sync" ? sync : null,
    );
    const refuse = async () => {
      page.control("c1", "nbh-answer-submit")!.click();
      await settle();
      assert.equal(page.control("c1", "nbh-error")!.textContent, refusal);
    };
    await refuse();
    // typing in Other with only spaces is not an answer yet: the note stays
    const other = page.control("c1", "nbh-other-text") as HTMLInputElement;
    other.value = "  ";
    other.dispatchEvent(new Event("input"));
    assert.ok(page.control("c1", "nbh-error"));
    const inputs = page.card("c1").querySelectorAll<HTMLInputElement>('[data-testid="nbh-option-input"]');
    inputs[1].checked = true;
    inputs[1].dispatchEvent(new Event("change"));
    assert.equal(page.control("c1", "nbh-error"), null, "an option is picked: the refusal is no longer true");
    await refuse();
    other.value = "the biggest one";
    other.dispatchEvent(new Event("input"));
    assert.equal(page.control("c1", "nbh-error"), null, "an Other answer with text: the refusal goes too");
    page.close();
  });

  test("hovering an AskUser option changes no layout: every preview's space is reserved, the shown one only swaps its text", async () => {
    const options = [
      { label: "a.txt", description: "", preview: "one line" },
      { label: "b.txt", description: "", preview: "line 1\nline 2\nline 3\nline 4" },
    ];
    const page = await drawReply([pause({ kind: "ask_user", tool_name: "AskUser", ask_user: { questions: [{ question: "Which file?", header: "File", options }] } })]);
    const card = page.card("c1");
    // what decides the card's height: which elements are in the layout, and the text of those that take space
    const layout = () =>
      Array.from(card.querySelectorAll<HTMLElement>("*"))
        .map((e) => `${e.tagName}${e.hidden ? " hidden" : ""}${e.closest(".nbh-preview-shown") ? "" : ` ${e.childElementCount ? "" : e.textContent}`}`)
        .join("|");
    const box = page.control<HTMLElement>("c1", "nbh-preview-box")!;
    assert.deepEqual(
      Array.from(box.querySelectorAll(".nbh-preview-sizer pre")).map((e) => e.textContent),
      options.map((o) => o.preview),
    );
    const before = layout();
    const [a, b] = Array.from(card.querySelectorAll<HTMLElement>('[data-testid="nbh-option"]'));
    b.dispatchEvent(new window.MouseEvent("mouseenter"));
    assert.equal(page.control("c1", "nbh-preview")!.textContent, options[1].preview);
    assert.equal(layout(), before);
    b.dispatchEvent(new window.MouseEvent("mouseleave"));
    a.querySelector("input")!.click();
    assert.equal(page.control("c1", "nbh-preview-label")!.textContent, "Preview of your choice: a.txt");
    page.control("c1", "nbh-answer-submit")!.click();
    await settle();
    assert.deepEqual(page.fake.actions("answer")[0].answers, [{ question: "Which file?", selected: ["a.txt"], other: null }]);
    page.close();
  });

  test("a form card converts and sends its values", async () => {
    const response_schema = { type: "object", properties: { n: { type: "integer" } } };
    const page = await drawReply([pause({ kind: "form", tool_name: "AskForm", response_schema })]);
    page.card("c1").querySelector<HTMLInputElement>('[data-field="n"]')!.value = "4";
    page.control("c1", "nbh-form-submit")!.click();
    await settle();
    assert.deepEqual(page.fake.actions("submit")[0].value, { n: 4 });
    page.close();
  });

  test("a form card can be declined, as AskUser's: the agent reads that the user declined, nothing typed is sent", async () => {
    const response_schema = { type: "object", properties: { n: { type: "integer" } } };
    const page = await drawReply([pause({ kind: "form", tool_name: "AskForm", response_schema })]);
    page.card("c1").querySelector<HTMLInputElement>('[data-field="n"]')!.value = "4";
    page.control("c1", "nbh-form-decline")!.click();
    await settle();
    assert.deepEqual(
      page.fake.actions("return_error").map((m) => m.message),
      ["The user declined to fill in this form."],
    );
    assert.equal(page.fake.actions("submit").length, 0);
    page.close();
  });

  test("a decided card shows the record, no buttons", async () => {
    const page = await drawReply([pause({ status: "decided", decision: { action: "deny", cause: "timeout" } })], { status: "finished" });
    assert.equal(page.control("c1", "nbh-decision")!.textContent, "Not answered before the deadline: did not run");
    assert.equal(page.control("c1", "nbh-approve"), null);
    page.close();
  });

  test("a bidi override or zero-width character in what the agent was told is shown escaped, not applied", async () => {
    const note = "The user denied your call to Bash, saying: ok\u202Etxt.exe\u200b done";
    const page = await drawReply([pause({ status: "decided", decision: { action: "deny", reason: "ok\u202Etxt.exe", note } })], { status: "finished" });
    assert.equal(
      page.control("c1", "nbh-decision-note")!.textContent,
      "The agent was told: The user denied your call to Bash, saying: ok\\u202etxt.exe\\u200b done",
    );
    page.close();
  });

  test("visibleText escapes bidi, zero-width and control characters, keeps spaces, newlines and letters", () => {
    assert.equal(visibleText("a b\nc\u202Ed\u2066e\u0000f\u00a0g é 😀"), "a b\nc\\u202ed\\u2066e\\u0000f\\u00a0g é 😀");
  });

  test("a delivered M-of-N card says who approved and when; a veto names who denied", async () => {
    const both = [
      { by: "alice", at: 1_700_000_000, action: "approve" },
      { by: "bob", at: 1_700_000_060, action: "approve" },
    ];
    const page = await drawReply(
      [
        pause({ status: "delivered", approvals_needed: 2, approvals: both, decision: { action: "approve" } }),
        pause({ tool_call_id: "c2", status: "delivered", approvals_needed: 2, approvals: [both[0], { by: "carol", at: 1_700_000_090, action: "deny" }], decision: { action: "deny" } }),
      ],
      { status: "finished" },
    );
    const one = page.control("c1", "nbh-approvals")!;
    assert.match(one.textContent!, /^2 of 2 approvals: alice \(.+\), bob \(.+\)\.$/);
    assert.equal(one.children.length, 0); // text, not markup
    assert.match(page.control("c2", "nbh-approvals")!.textContent!, /^1 of 2 approvals: alice \(.+\); denied by carol \(.+\)\.$/);
    assert.equal(page.control("c1", "nbh-decision")!.textContent, "Approved");
    page.close();
  });

  test("two open confirmations: Approve all sends one batch naming both calls", async () => {
    const page = await drawReply([pause(), pause({ tool_call_id: "c2" })], {}, (m) =>
      m.action === "batch" ? { results: [{ tool_call_id: "c1", ok: true }, { tool_call_id: "c2", ok: false, error: "No." }] } : m.action === "sync" ? { transcript: { seq: 0, current: true }, cards: { seq: 0, current: true } } : null,
    );
    page.el.querySelector<HTMLButtonElement>('[data-testid="nbh-approve-all"]')!.click();
    await settle();
    const batch = page.fake.actions("batch");
    assert.equal(batch.length, 1);
    assert.deepEqual(batch[0].items, [
      { action: "approve", tool_call_id: "c1", reply_id: "r1" },
      { action: "approve", tool_call_id: "c2", reply_id: "r1" },
    ]);
    assert.equal(page.control("c2", "nbh-error")!.textContent, "No.");
    assert.equal(page.control("c1", "nbh-error"), null);
    page.close();
  });
});

describe("the reply's status after its kernel goes", () => {
  test("the announced status follows the chip: 'not live', never still 'waiting for you'", async () => {
    const page = await drawReply([pause()], { status: "running" });
    const announced = () => page.el.querySelector('[data-testid="nbh-announce"]')!.textContent;
    page.fake.set("status", "paused");
    await settle();
    assert.equal(announced(), "helper: waiting for you");
    assert.equal(page.status(), "waiting for you");
    // the kernel restarted: the comm is gone, so the next send fails
    page.fake.answer = () => {
      throw new Error("the comm is closed");
    };
    page.control("c1", "nbh-approve")!.click();
    await settle();
    assert.equal(page.status(), "not live");
    assert.equal(announced(), "helper: not live");
    page.close();
  });
});
