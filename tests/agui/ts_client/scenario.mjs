// Drives an nb_hitl AG-UI server with the official AG-UI TypeScript client
// (@ag-ui/client): first run, resume, replay, cancel, then a new message
// while interrupts are open. One JSON line per step on stdout.
//
//   node scenario.mjs <server-url> <token>
//
// The server is the two-pause demo agent (nb_hitl.agui.demo): its first turn
// asks "Which file should I archive?" (AskUser) and wants to delete
// old_log.txt (a confirmation), so each first run ends with two interrupts.
import { HttpAgent, buildResumeArray } from "@ag-ui/client";

const [url, token] = process.argv.slice(2);
if (!url || !token) {
  console.error("usage: node scenario.mjs <server-url> <token>");
  process.exit(2);
}
const QUESTION = "Which file should I archive?";
let counter = 0;

function emit(step, fields) {
  process.stdout.write(JSON.stringify({ step, ...fields }) + "\n");
}

function agentFor(threadId) {
  return new HttpAgent({ url, threadId, headers: { Authorization: `Bearer ${token}` } });
}

// One run with the client's own API; what its subscriber saw.
async function run(agent, parameters) {
  const seen = { types: [], protocolVersion: undefined, outcome: undefined, interrupts: [], error: undefined };
  const subscriber = {
    onEvent: ({ event }) => {
      seen.types.push(event.type);
    },
    onRunStartedEvent: ({ event }) => {
      seen.protocolVersion = event.protocolVersion;
    },
    onRunFinishedEvent: (params) => {
      seen.outcome = params.outcome;
      seen.replayed = params.event.metadata?.nb_hitl?.replayed === true;
      seen.note = params.event.metadata?.nb_hitl?.refused_input;
      if (params.outcome === "interrupt") seen.interrupts = params.interrupts;
      if (params.outcome === "success") seen.result = params.result;
    },
    onRunErrorEvent: ({ event }) => {
      seen.error = { code: event.code, message: event.message, metadata: event.metadata };
    },
  };
  try {
    await agent.runAgent({ runId: `ts-run-${++counter}`, ...parameters }, subscriber);
  } catch (err) {
    seen.thrown = `${err?.name}: ${err?.message}`;
  }
  return seen;
}

function say(agent, text) {
  agent.addMessage({ id: `ts-user-${++counter}`, role: "user", content: text });
}

// tool call id -> tool name, from the client's own message list
function toolNames(agent) {
  const names = {};
  for (const m of agent.messages) for (const tc of m.toolCalls ?? []) names[tc.id] = tc.function.name;
  return names;
}

function answers(agent, interrupts, how) {
  const names = toolNames(agent);
  const responses = {};
  for (const i of interrupts) {
    const name = names[i.toolCallId];
    if (how === "cancel") responses[i.id] = { status: "cancelled" };
    else if (name === "AskUser")
      responses[i.id] = { status: "resolved", payload: { answers: [{ question: QUESTION, selected: ["draft.md"] }] } };
    else responses[i.id] = { status: "resolved", payload: { approved: true } };
  }
  return buildResumeArray(interrupts, responses);
}

function brief(seen) {
  return {
    outcome: seen.outcome ?? null,
    protocolVersion: seen.protocolVersion ?? null,
    interruptIds: seen.interrupts.map((i) => i.id),
    result: seen.result ?? null,
    replayed: seen.replayed ?? false,
    error: seen.error ? { code: seen.error.code ?? null, message: seen.error.message } : null,
    thrown: seen.thrown ?? null,
    first: seen.types[0] ?? null,
    last: seen.types.at(-1) ?? null,
  };
}

async function main() {
  // 1. first run: two interrupts, the client keeps them as pendingInterrupts
  const a = agentFor("ts-c28-a");
  say(a, "Please tidy up.");
  const first = await run(a, {});
  emit("first_run", {
    ...brief(first),
    pending: a.pendingInterrupts.map((i) => i.id),
    tools: Object.values(toolNames(a)).sort(),
  });

  // 2. resume: answer AskUser and approve the deletion
  const resume = answers(a, a.pendingInterrupts, "resolve");
  const resumed = await run(a, { resume });
  emit("resume", { ...brief(resumed), pending: a.pendingInterrupts.map((i) => i.id) });

  // 3. replay: the same resume again (a retried request); nothing runs twice
  const replay = await run(a, { resume });
  emit("replay", brief(replay));

  // 4. cancel: another thread, both interrupts cancelled
  const b = agentFor("ts-c28-b");
  say(b, "Please tidy up.");
  const bFirst = await run(b, {});
  const cancelled = await run(b, { resume: answers(b, b.pendingInterrupts, "cancel") });
  emit("cancel", { ...brief(cancelled), interruptsBefore: bFirst.interrupts.length });

  // 5. a new message while interrupts are open
  const c = agentFor("ts-c28-c");
  say(c, "Please tidy up.");
  const cFirst = await run(c, {});
  // the same client refuses by itself: it knows the pending interrupts
  say(c, "Never mind, what time is it?");
  const local = await run(c, {});
  emit("new_message_same_client", { ...brief(local), interruptsBefore: cFirst.interrupts.length });

  // a client that did not see the pause (another tab, a reload): the server
  // runs nothing and ends the run with the open interrupts again (AG-UI 1.0),
  // so the client fills pendingInterrupts by itself
  const d = agentFor("ts-c28-c");
  say(d, "Never mind, what time is it?");
  const refusedId = d.messages.at(-1).id;
  const refused = await run(d, {});
  emit("new_message_refused", {
    ...brief(refused),
    pending: d.pendingInterrupts.map((i) => i.id),
    sameAsAnnounced:
      JSON.stringify(d.pendingInterrupts.map((i) => i.id)) === JSON.stringify(cFirst.interrupts.map((i) => i.id)),
    note: refused.note ?? null,
    refusedMessageKept: d.messages.some((m) => m.id === refusedId),
  });

  // it answers them with the client's own API, nothing patched by hand
  const dNames = toolNames(d);
  const dResume = buildResumeArray(
    d.pendingInterrupts,
    Object.fromEntries(
      d.pendingInterrupts.map((i) => [
        i.id,
        dNames[i.toolCallId] === "AskUser"
          ? { status: "resolved", payload: { answers: [{ question: QUESTION, selected: ["notes.txt"] }] } }
          : { status: "resolved", payload: { approved: false, reason: "Keep the log until Friday." } },
      ]),
    ),
  );
  const after = await run(d, { resume: dResume });
  emit("resume_after_refusal", {
    ...brief(after),
    toolNames: d.pendingInterrupts.length ? null : Object.values(dNames).sort(),
    pending: d.pendingInterrupts.map((i) => i.id),
  });
}

main().catch((err) => {
  emit("crash", { error: String(err?.stack ?? err) });
  process.exit(1);
});
