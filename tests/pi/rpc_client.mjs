// Drives an RPC agent with pi 0.73.1's own RpcClient through every method it has, and prints
// one JSON object: {<target>: {<step>: {value} | {error}, ...}, ...}.
//
//   node rpc_client.mjs <target>=<cliPath>=<workdir> ...
//
// Each target runs in its own work directory (its cwd and HOME; the agent dirs inside it), all
// targets at the same time. The agent is started as RpcClient does it: `node <cliPath> --mode rpc
// --provider faux --model faux-1`, with PITRIO_FAUX_SCRIPT naming SCRIPT below (written to the
// work directory). tests/host/rpc/test_pi_rpc_client.py runs this against pitrio (pitrio-shim.mjs)
// and against pi itself (pi-faux-cli.mjs) and compares the answers.
//
// Synchronisation is by events only: a tool call that waits for a file holds the agent busy
// while steer / follow_up / abort are sent, and the file is created once their answers came.
import fs from "node:fs";
import path from "node:path";
import { RpcClient } from "@mariozechner/pi-coding-agent";

const WAIT_FOR = (name) => `while [ ! -f ${name} ]; do sleep 0.01; done; echo released ${name}`;
const TIMEOUT = 20000;

// The faux model's answers, one per request, in pitrio's faux-script format.
const SCRIPT = [
	"Hello back.",
	{ content: [{ type: "toolCall", name: "bash", arguments: { command: WAIT_FOR("go") }, id: "call_go" }] },
	"Steered.",
	"Followed up.",
	{ content: [{ type: "toolCall", name: "bash", arguments: { command: WAIT_FOR("never") }, id: "call_never" }] },
	// pi's faux provider uses up a response for the request its agent still makes after an
	// abort (answered "aborted"); pitrio makes none. The same text for every later answer keeps
	// the two in step.
	"Noted.",
	"Noted.",
	"Noted.",
];

function nextEvent(client, match) {
	return new Promise((resolve) => {
		const stop = client.onEvent((event) => {
			if (match(event)) {
				stop();
				resolve(event);
			}
		});
	});
}

async function drive(workdir, cliPath) {
	fs.mkdirSync(workdir, { recursive: true });
	const scriptPath = path.join(workdir, "faux.json");
	fs.writeFileSync(scriptPath, JSON.stringify(SCRIPT));
	const client = new RpcClient({
		cliPath,
		cwd: workdir,
		provider: "faux",
		model: "faux-1",
		env: {
			HOME: workdir,
			PITRIO_FAUX_SCRIPT: scriptPath,
			PITRIO_CODING_AGENT_DIR: path.join(workdir, "agent"),
			PI_CODING_AGENT_DIR: path.join(workdir, "agent"),
			PI_OFFLINE: "1",
		},
	});
	const results = {};
	// Every public method called (the test checks that none was left out).
	const called = new Set();
	for (const name of Object.getOwnPropertyNames(RpcClient.prototype)) {
		const method = client[name];
		if (name === "constructor" || typeof method !== "function") continue;
		client[name] = (...args) => {
			called.add(name);
			return method.apply(client, args);
		};
	}
	const step = async (name, call) => {
		try {
			const value = await call();
			results[name] = { value: value === undefined ? "<undefined>" : value };
		} catch (error) {
			results[name] = { error: String(error?.message ?? error) };
		}
		return results[name].value;
	};
	const all = [];
	client.onEvent((event) => all.push(event));

	await client.start();
	try {
		const state = await step("getState", () => client.getState());
		await step("getAvailableModels", () => client.getAvailableModels());
		await step("setModel", () => client.setModel("faux", "faux-1"));
		await step("setModelUnknown", () => client.setModel("faux", "no-such-model"));
		await step("cycleModel", () => client.cycleModel());
		await step("setThinkingLevel", () => client.setThinkingLevel("high"));
		await step("cycleThinkingLevel", () => client.cycleThinkingLevel());
		await step("setSteeringMode", () => client.setSteeringMode("one-at-a-time"));
		await step("setFollowUpMode", () => client.setFollowUpMode("one-at-a-time"));
		await step("setAutoCompaction", () => client.setAutoCompaction(false));
		await step("setAutoRetry", () => client.setAutoRetry(false));
		await step("abortRetry", () => client.abortRetry());
		await step("getStateAfterSettings", () => client.getState());

		// A plain prompt.
		await step("promptAndWait", () => client.promptAndWait("Hello", undefined, TIMEOUT));

		// steer and follow_up while a tool call holds the agent busy.
		const busy = client.collectEvents(TIMEOUT);
		const toolStarted = nextEvent(client, (e) => e.type === "tool_execution_start");
		await step("prompt", () => client.prompt("Run the tool"));
		await toolStarted;
		await step("promptWhileBusy", () => client.prompt("Not now"));
		await step("steer", () => client.steer("Change of plan"));
		await step("followUp", () => client.followUp("And then this"));
		await step("getStateWhileBusy", () => client.getState());
		fs.writeFileSync(path.join(workdir, "go"), "");
		await step("collectEvents", () => busy);

		// abort while a tool call waits for a file that never comes.
		const aborted = client.collectEvents(TIMEOUT);
		const blocked = nextEvent(client, (e) => e.type === "tool_execution_start");
		await client.prompt("Block");
		await blocked;
		await step("abort", () => client.abort());
		await step("abortedEvents", () => aborted);

		await step("getMessages", () => client.getMessages());
		await step("getLastAssistantText", () => client.getLastAssistantText());
		await step("getForkMessages", () => client.getForkMessages());
		await step("getSessionStats", () => client.getSessionStats());
		await step("getCommands", () => client.getCommands());
		await step("setSessionName", () => client.setSessionName("A named session"));
		await step("bash", () => client.bash("echo from bash; exit 3"));
		await step("abortBash", () => client.abortBash());
		await step("compact", () => client.compact("Keep it short"));
		await step("exportHtml", () => client.exportHtml(path.join(workdir, "export.html")));
		await step("getStateBeforeMoves", () => client.getState());

		await step("clone", () => client.clone());
		const forks = (await step("getForkMessagesAfterClone", () => client.getForkMessages())) ?? [];
		await step("fork", () => client.fork(forks[0]?.entryId ?? "missing"));
		await step("forkUnknown", () => client.fork("no-such-entry"));
		await step("newSession", () => client.newSession(state?.sessionFile));
		const idle = client.waitForIdle(TIMEOUT);
		await step("promptAfterNewSession", () => client.prompt("Again"));
		await step("waitForIdle", () => idle);
		await step("getMessagesAfterNewSession", () => client.getMessages());
		await step("getStateAfterNewSession", () => client.getState());
		await step("switchSession", () => client.switchSession(state?.sessionFile ?? "missing"));
		await step("getStateAfterSwitch", () => client.getState());
		await step("getMessagesAfterSwitch", () => client.getMessages());
		results.eventTypes = { value: all.map((e) => e.type) };
		results.stderr = { value: client.getStderr() };
	} finally {
		await client.stop();
	}
	results.called = { value: [...called].sort() };
	return results;
}

const targets = process.argv.slice(2).map((arg) => {
	const [name, cliPath, workdir] = arg.split("=");
	return { name, cliPath: path.resolve(cliPath), workdir: path.resolve(workdir) };
});
const answers = await Promise.all(targets.map((t) => drive(t.workdir, t.cliPath)));
// What RpcClient offers, so the test can check that every method was called.
const output = { methods: Object.getOwnPropertyNames(RpcClient.prototype) };
targets.forEach((t, i) => {
	output[t.name] = answers[i];
});
// Exit once the (large) record is flushed: a pipe write is asynchronous.
process.stdout.write(`${JSON.stringify(output)}\n`, () => process.exit(0));
