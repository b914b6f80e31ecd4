#!/usr/bin/env node
/*
 * capture.mjs — record reference JSON from the real pi (npm @mariozechner/pi-coding-agent 0.73.1,
 * which ships @mariozechner/pi-ai and @mariozechner/pi-agent-core) for pitrio's Python tests.
 *
 * What it does
 *   - wire_samples.json           samples of every pi-ai wire type, JSON round-tripped through pi's own objects
 *   - models_catalogue.json       the complete built-in model catalogue ({provider: {modelId: Model}})
 *   - faux_<script>.jsonl         AssistantMessageEvents from pi-ai's faux provider, one line per event
 *                                 (JSON.stringify at the moment the `for await` consumer receives it),
 *                                 last line {"result": <await stream.result()>}
 *   - faux_<script>.pushed.jsonl  the same events serialised at the moment pi pushes them into the stream
 *   - faux_<script>.input.json    the exact faux script (responses, request context, options) for replay
 *   - faux_partial_semantics.json per faux stream: indices of events whose serialisation differs between push
 *                                 time, receive time and after the stream finished (aliasing of `partial`)
 *   - agent_events_<script>.jsonl AgentEvents from a pi-agent-core Agent driven by the faux provider,
 *                                 one line per event, JSON.stringify inside the subscribe() listener
 *   - agent_events_<script>.input.json  the agent script (prompt, tools, faux responses, queued messages)
 *
 * How to run
 *   mkdir -p /work/scratch/pi && cd /work/scratch/pi && npm install @mariozechner/pi-coding-agent@0.73.1
 *   cd /work/scratch/pi && node /work/main/tests/data/pi/capture.mjs /work/main/tests/data/pi
 *   (node >= 20). pi's packages are resolved from node_modules of the current working directory
 *   (walking up), not from this script's location.
 *
 * Determinism
 *   Output is deterministic where pi allows it: scripted messages carry fixed `timestamp`s, tool calls carry
 *   explicit ids, the faux provider is registered with a fixed api name ("faux") and tokenSize {min:1,max:1}
 *   (exactly 4 characters per delta, no tokensPerSecond, so chunks are scheduled with queueMicrotask).
 *   Timestamps that pi itself takes from Date.now() (faux error/aborted messages, the agent's tool-result
 *   messages, diagnostics) cannot be set through the API, so this script replaces Date.now with a constant
 *   sentinel (NOW_SENTINEL below). Any timestamp equal to NOW_SENTINEL in the output means "pi used Date.now()
 *   here"; tests should treat it as "some current time". Pass --real-clock to keep the real Date.now.
 *
 *   To compare push-time and receive-time snapshots this script wraps pi-ai's exported
 *   EventStream.prototype.push at runtime (observation only: it serialises the event and calls the original).
 *   No pi code is copied or modified on disk.
 */
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const NOW_SENTINEL = 1767225600000; // 2026-01-01T00:00:00.000Z
const T0 = 1735689600000; // 2025-01-01T00:00:00.000Z, base for scripted timestamps

const args = process.argv.slice(2);
const realClock = args.includes("--real-clock");
const outDir = path.resolve(args.find((a) => !a.startsWith("--")) ?? ".");
if (!realClock) Date.now = () => NOW_SENTINEL;

// ---------------------------------------------------------------------------------------------
// Resolve pi's packages from process.cwd()'s node_modules (bare specifiers would resolve from here).
function findPackageDir(name) {
	let dir = process.cwd();
	while (true) {
		const candidate = path.join(dir, "node_modules", ...name.split("/"));
		if (fs.existsSync(path.join(candidate, "package.json"))) return candidate;
		const parent = path.dirname(dir);
		if (parent === dir) throw new Error(`cannot find ${name} in node_modules above ${process.cwd()}`);
		dir = parent;
	}
}
function packageInfo(name) {
	const dir = findPackageDir(name);
	const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
	const dot = pkg.exports?.["."];
	const entry = (typeof dot === "string" ? dot : dot?.import ?? dot?.default) ?? pkg.main ?? "index.js";
	return { dir, version: pkg.version, url: pathToFileURL(path.join(dir, entry)).href };
}
const aiPkg = packageInfo("@mariozechner/pi-ai");
const corePkg = packageInfo("@mariozechner/pi-agent-core");
let codingAgentVersion = null;
try {
	codingAgentVersion = packageInfo("@mariozechner/pi-coding-agent").version;
} catch {}
const ai = await import(aiPkg.url);
const core = await import(corePkg.url);
for (const [n, v] of [["pi-ai", aiPkg.version], ["pi-agent-core", corePkg.version], ["pi-coding-agent", codingAgentVersion]]) {
	if (v !== "0.73.1") console.warn(`warning: expected ${n} 0.73.1, found ${v}`);
}

const { Type, StringEnum, fauxText, fauxThinking, fauxToolCall, fauxAssistantMessage, registerFauxProvider } = ai;

// ---------------------------------------------------------------------------------------------
// Helpers
const roundTrip = (x) => JSON.parse(JSON.stringify(x));
fs.mkdirSync(outDir, { recursive: true });
const written = [];
function writeJson(name, value) {
	fs.writeFileSync(path.join(outDir, name), JSON.stringify(value, null, 2) + "\n");
	written.push(name);
}
function writeLines(name, lines) {
	fs.writeFileSync(path.join(outDir, name), lines.join("\n") + "\n");
	written.push(name);
}

// Observation hook: serialise every event at the moment the producer pushes it.
const pushLog = new WeakMap();
const originalPush = ai.EventStream.prototype.push;
ai.EventStream.prototype.push = function (event) {
	if (!this.done) {
		if (!pushLog.has(this)) pushLog.set(this, []);
		pushLog.get(this).push(JSON.stringify(event));
	}
	return originalPush.call(this, event);
};

const FAUX_REGISTRATION = { api: "faux", provider: "faux", tokenSize: { min: 1, max: 1 } };
function newFaux() {
	return registerFauxProvider(FAUX_REGISTRATION);
}

// A 1x1 transparent PNG.
const PNG_1X1 =
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

// ---------------------------------------------------------------------------------------------
// d. models catalogue
const catalogue = {};
for (const provider of ai.getProviders()) {
	catalogue[provider] = {};
	for (const model of ai.getModels(provider)) catalogue[provider][model.id] = roundTrip(model);
}
writeJson("models_catalogue.json", catalogue);

// ---------------------------------------------------------------------------------------------
// a. wire samples
function mustModel(provider, id) {
	const m = ai.getModel(provider, id);
	if (!m) throw new Error(`model ${provider}/${id} not in catalogue`);
	return m;
}
const sonnet = mustModel("anthropic", "claude-sonnet-4-5");
const gpt4oMini = mustModel("openai", "gpt-4o-mini");

const readTool = {
	name: "read_file",
	description: "Read a file from the workspace. Returns its text content.",
	parameters: Type.Object({
		path: Type.String({ description: "Path relative to the workspace root" }),
		offset: Type.Optional(Type.Integer({ minimum: 1, description: "1-based line to start at" })),
		limit: Type.Optional(Type.Number({ minimum: 1, maximum: 2000 })),
		encoding: Type.Optional(StringEnum(["utf-8", "latin-1"], { description: "Text encoding", default: "utf-8" })),
		filters: Type.Optional(
			Type.Array(
				Type.Object({
					pattern: Type.String(),
					ignoreCase: Type.Boolean({ default: false }),
				}),
			),
		),
		mode: Type.Union([Type.Literal("text"), Type.Literal("lines")]),
		meta: Type.Record(Type.String(), Type.Any()),
		nullable: Type.Union([Type.String(), Type.Null()]),
	}),
};

const usageSonnet = {
	input: 1234,
	output: 567,
	cacheRead: 2048,
	cacheWrite: 100,
	totalTokens: 1234 + 567 + 2048 + 100,
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
};
ai.calculateCost(sonnet, usageSonnet);
const usageZero = fauxAssistantMessage("x").usage;

const userString = { role: "user", content: "What is in README.md?", timestamp: T0 + 1000 };
const userArray = {
	role: "user",
	content: [
		{ type: "text", text: "Describe this image, please." },
		{ type: "image", data: PNG_1X1, mimeType: "image/png" },
	],
	timestamp: T0 + 2000,
};
function assistantBase(model, content, stopReason, timestamp, usage) {
	// Same field order as pi's providers build their output object.
	return {
		role: "assistant",
		content,
		api: model.api,
		provider: model.provider,
		model: model.id,
		usage: usage ?? structuredClone(usageZero),
		stopReason,
		timestamp,
	};
}
const assistantStop = assistantBase(
	sonnet,
	[
		{ type: "thinking", thinking: "The user wants a summary of README.md.", thinkingSignature: "EqQBCkgIBxABGAIiQL1..." },
		{ type: "text", text: "README.md describes the project and how to install it." },
	],
	"stop",
	T0 + 3000,
	usageSonnet,
);
const assistantToolUse = assistantBase(
	sonnet,
	[
		fauxText("Let me read both files."),
		fauxToolCall("read_file", { path: "README.md" }, { id: "toolu_01A" }),
		fauxToolCall("read_file", { path: "docs/intro.md", offset: 10, filters: [{ pattern: "ü", ignoreCase: true }] }, { id: "toolu_01B" }),
	],
	"toolUse",
	T0 + 4000,
);
const assistantError = assistantBase(sonnet, [fauxText("Partial answer before the failure")], "error", T0 + 5000);
assistantError.errorMessage = "529 Overloaded";
const openrouterGpt4oMini = mustModel("openrouter", "openai/gpt-4o-mini");
// openai-completions sets responseId (chunk.id) and responseModel (chunk.model) after timestamp.
const assistantWithResponseId = assistantBase(openrouterGpt4oMini, [fauxText("Hi!")], "stop", T0 + 6000);
assistantWithResponseId.responseId = "gen-1735689606-AbC123";
assistantWithResponseId.responseModel = "openai/gpt-4o-mini-2024-07-18";
const assistantForwardCompat = assistantBase(gpt4oMini, [fauxText("From the future.")], "stop", T0 + 7000);
assistantForwardCompat["x-future"] = 1;
const assistantAborted = assistantBase(sonnet, [fauxText("I was saying")], "aborted", T0 + 8000);
assistantAborted.errorMessage = "Request was aborted";
const diagnostic = ai.createAssistantMessageDiagnostic("websocket_fallback", "socket closed", { attempt: 2 });
diagnostic.timestamp = T0 + 8500;
const assistantWithDiagnostics = assistantBase(mustModel("openai-codex", "gpt-5.2-codex"), [fauxText("ok")], "stop", T0 + 9000);
assistantWithDiagnostics.responseId = "resp_123";
assistantWithDiagnostics.diagnostics = [diagnostic];

const toolResultDetails = {
	role: "toolResult",
	toolCallId: "toolu_01A",
	toolName: "read_file",
	content: [{ type: "text", text: "# pitrio\nA Python port of pi.\n" }],
	details: { path: "README.md", lines: 2, truncated: false, diff: null },
	isError: false,
	timestamp: T0 + 10000,
};
const toolResultImage = {
	role: "toolResult",
	toolCallId: "toolu_01C",
	toolName: "screenshot",
	content: [
		{ type: "text", text: "Captured 1x1 screenshot" },
		{ type: "image", data: PNG_1X1, mimeType: "image/png" },
	],
	isError: false,
	timestamp: T0 + 11000,
};
const toolResultError = {
	role: "toolResult",
	toolCallId: "toolu_01B",
	toolName: "read_file",
	content: [{ type: "text", text: "ENOENT: no such file or directory, open 'docs/intro.md'" }],
	details: {},
	isError: true,
	timestamp: T0 + 12000,
};

const fauxModelForSamples = (() => {
	const f = newFaux();
	const m = f.getModel();
	f.unregister();
	return m;
})();

const wireSamples = {
	text_content: fauxText("Hello from pi."),
	text_content_with_signature: {
		type: "text",
		text: "Final answer.",
		// openai-responses encodes TextSignatureV1 as a JSON string
		textSignature: JSON.stringify({ v: 1, id: "msg_0123456789abcdef", phase: "final_answer" }),
	},
	text_content_with_google_signature: { type: "text", text: "Gemini text", textSignature: "CiQB0e2Kb3NpZ25hdHVyZQ==" },
	thinking_content: fauxThinking("Let me think about this step by step."),
	thinking_content_with_signature: {
		type: "thinking",
		thinking: "The file probably lives under docs/.",
		thinkingSignature: "EqQBCkgIBxABGAIiQL1sig==",
	},
	thinking_content_redacted: {
		type: "thinking",
		thinking: "[Reasoning redacted]",
		thinkingSignature: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj2o",
		redacted: true,
	},
	image_content: { type: "image", data: PNG_1X1, mimeType: "image/png" },
	tool_call: fauxToolCall("read_file", { path: "src/main.py", offset: 1 }, { id: "toolu_01XyZ" }),
	tool_call_empty_arguments: fauxToolCall("list_files", {}, { id: "call_empty" }),
	tool_call_with_thought_signature: {
		...fauxToolCall("search", { query: "naïve café", tags: ["a", "b"], nested: { depth: 2, ok: true } }, { id: "call_g1" }),
		thoughtSignature: "CiwBcsjafThoughtSig==",
	},
	usage: usageSonnet,
	usage_zero: usageZero,
	user_message_string: userString,
	user_message_array: userArray,
	assistant_message_stop: assistantStop,
	assistant_message_tool_use: assistantToolUse,
	assistant_message_error: assistantError,
	assistant_message_aborted: assistantAborted,
	assistant_message_with_response_id: assistantWithResponseId,
	assistant_message_with_diagnostics: assistantWithDiagnostics,
	assistant_message_forward_compat: assistantForwardCompat,
	assistant_message_faux_helper: fauxAssistantMessage([fauxText("made by fauxAssistantMessage")], {
		timestamp: T0 + 9500,
		responseId: "faux-resp-1",
	}),
	tool_result_message_with_details: toolResultDetails,
	tool_result_message_with_image: toolResultImage,
	tool_result_message_error: toolResultError,
	tool: readTool,
	context: {
		systemPrompt: "You are a helpful coding assistant.",
		messages: [userString, assistantToolUse, toolResultDetails, toolResultError, userArray],
		tools: [readTool],
	},
	model_anthropic_claude_sonnet: sonnet,
	model_openai_gpt_4o_mini: gpt4oMini,
	model_openrouter_gpt_4o_mini: openrouterGpt4oMini,
	model_google_gemini: mustModel("google", "gemini-2.5-flash"),
	model_google_gemini_thinking_level_map: mustModel("google", "gemini-3-pro-preview"),
	model_openrouter_compat: mustModel("openrouter", "deepseek/deepseek-v4-pro"),
	model_headers_and_compat: mustModel("github-copilot", "claude-sonnet-4.5"),
	model_thinking_level_map_off_null: mustModel("openai", "gpt-5"),
	model_thinking_level_map_xhigh: mustModel("anthropic", "claude-opus-4-7"),
	model_openai_completions_compat: mustModel("zai", "glm-4.7"),
	model_faux: fauxModelForSamples,
};
writeJson("wire_samples.json", roundTrip(wireSamples));

// ---------------------------------------------------------------------------------------------
// b. faux provider event streams
const partialSemantics = {};

function describeStep(step) {
	return typeof step === "function" ? { factory: step.name || "anonymous", source: step.toString() } : roundTrip(step);
}

async function drain(faux, name, context, options, { abortAfterTextDeltas, controller } = {}) {
	const s = ai.streamSimple(faux.getModel(), context, options);
	const received = [];
	const events = [];
	let textDeltas = 0;
	for await (const event of s) {
		received.push(JSON.stringify(event));
		events.push(event);
		if (event.type === "text_delta" && abortAfterTextDeltas && ++textDeltas === abortAfterTextDeltas) controller.abort();
	}
	const result = await s.result();
	const resultLine = JSON.stringify({ result });
	writeLines(`faux_${name}.jsonl`, [...received, resultLine]);
	const pushed = pushLog.get(s) ?? [];
	writeLines(`faux_${name}.pushed.jsonl`, [...pushed, resultLine]);

	const afterEnd = events.map((e) => JSON.stringify(e));
	const diff = (a, b) => a.map((x, i) => (x === b[i] ? null : i)).filter((i) => i !== null);
	partialSemantics[name] = {
		events: received.length,
		pushed: pushed.length,
		event_types: events.map((e) => e.type),
		receive_differs_from_push: diff(received, pushed),
		after_end_differs_from_receive: diff(afterEnd, received),
		after_end_differs_from_push: diff(afterEnd, pushed),
	};
	return result;
}

async function fauxScript(name, { responses, requests, notes, abortAfterTextDeltas }) {
	const faux = newFaux();
	faux.setResponses(responses);
	const input = {
		register: FAUX_REGISTRATION,
		model: roundTrip(faux.getModel()),
		responses: responses.map(describeStep),
		requests: [],
		notes,
	};
	for (let i = 0; i < requests.length; i++) {
		const { context, options = {} } = requests[i];
		const suffix = requests.length > 1 ? `${name}_${i + 1}` : name;
		let controller;
		let opts = options;
		const optsForFile = roundTrip(options);
		if (abortAfterTextDeltas) {
			controller = new AbortController();
			opts = { ...options, signal: controller.signal };
			optsForFile.signal = `AbortSignal; the consumer calls abort() right after receiving text_delta #${abortAfterTextDeltas}`;
		}
		input.requests.push({ output: `faux_${suffix}.jsonl`, context: roundTrip(context), options: optsForFile });
		await drain(faux, suffix, context, opts, { abortAfterTextDeltas, controller });
	}
	input.callCountAfter = faux.state.callCount;
	input.pendingResponsesAfter = faux.getPendingResponseCount();
	writeJson(`faux_${name}.input.json`, input);
	faux.unregister();
}

const simpleContext = (text, ts = T0) => ({
	systemPrompt: "You are a test assistant.",
	messages: [{ role: "user", content: text, timestamp: ts }],
});

await fauxScript("text", {
	responses: [
		fauxAssistantMessage(
			"The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs. Sphinx of black quartz!",
			{ timestamp: T0 + 100 },
		),
	],
	requests: [{ context: simpleContext("Say some pangrams.") }],
});

await fauxScript("text_astral", {
	responses: [fauxAssistantMessage("abc😀defg🎉hi", { timestamp: T0 + 150 })],
	requests: [{ context: simpleContext("Emoji please 🙂") }],
	notes:
		"Chunks are 4 UTF-16 code units (JS string slicing), so astral characters are split into lone surrogates, which JSON.stringify writes as \\udXXX escapes.",
});

await fauxScript("thinking_text", {
	responses: [
		fauxAssistantMessage(
			[
				fauxThinking("The user greets me; I should greet back politely."),
				fauxText("Hello! Nice to meet you. How can I help you with code today?"),
			],
			{ timestamp: T0 + 200 },
		),
	],
	requests: [{ context: simpleContext("Hi there"), options: { reasoning: "medium" } }],
});

await fauxScript("two_tool_calls", {
	responses: [
		fauxAssistantMessage(
			[
				fauxText("I'll look these up."),
				fauxToolCall(
					"search",
					{ query: "naïve café ☕", filters: { lang: ["en", "fr"], max: 3 }, exact: false },
					{ id: "call_1" },
				),
				fauxToolCall(
					"write_file",
					{ path: "out/Ünïcödé.txt", lines: ["α", "β", { nested: [1, 2.5, null] }], mode: "w" },
					{ id: "call_2" },
				),
			],
			{ stopReason: "toolUse", timestamp: T0 + 300 },
		),
	],
	requests: [{ context: simpleContext("Search and then write the results.") }],
});

await fauxScript("error", {
	responses: [
		fauxAssistantMessage("Working on it, one moment", {
			stopReason: "error",
			errorMessage: "boom",
			timestamp: T0 + 400,
		}),
	],
	requests: [{ context: simpleContext("Do the thing.") }],
});

await fauxScript("empty_queue", {
	responses: [],
	requests: [{ context: simpleContext("Anyone there?") }],
	notes: "No responses queued: pi reports 'No more faux responses queued'; its timestamp comes from Date.now().",
});

function echoLastUser(context, options, state, model) {
	const last = [...context.messages].reverse().find((m) => m.role === "user");
	const text =
		typeof last?.content === "string"
			? last.content
			: (last?.content ?? []).filter((b) => b.type === "text").map((b) => b.text).join("\n");
	return fauxAssistantMessage(`echo: ${text} (callCount=${state.callCount}, model=${model.id}, session=${options?.sessionId})`, {
		timestamp: T0 + 500,
	});
}
await fauxScript("factory", {
	responses: [echoLastUser],
	requests: [{ context: simpleContext("ping 123"), options: { sessionId: "factory-session" } }],
	notes: "The single response is a factory function (context, options, state, model) => AssistantMessage; see responses[0].source.",
});

const cacheContext1 = {
	systemPrompt: "You are a caching test assistant. Keep answers short.",
	messages: [{ role: "user", content: "First question: what is 2 + 2?", timestamp: T0 + 600 }],
};
const cacheAnswer1 = fauxAssistantMessage("2 + 2 = 4.", { timestamp: T0 + 601 });
const cacheContext2 = {
	systemPrompt: cacheContext1.systemPrompt,
	messages: [
		...cacheContext1.messages,
		// The assistant message as the caller would append it (the faux model stamps api/provider/model on it).
		{ ...cacheAnswer1, api: "faux", provider: "faux", model: "faux-1" },
		{ role: "user", content: "Second question: and 3 + 3?", timestamp: T0 + 602 },
	],
};
await fauxScript("session_cache", {
	responses: [cacheAnswer1, fauxAssistantMessage("3 + 3 = 6.", { timestamp: T0 + 603 })],
	requests: [
		{ context: cacheContext1, options: { sessionId: "session-1" } },
		{ context: cacheContext2, options: { sessionId: "session-1" } },
	],
	notes: "Two requests on one registration with the same sessionId; the second context extends the first.",
});

const usageEstimateContext = {
	systemPrompt: "You are a usage-estimate test assistant.",
	messages: [
		{
			role: "user",
			content: [
				{ type: "text", text: "Look at this image and read the file." },
				{ type: "image", data: PNG_1X1, mimeType: "image/png" },
			],
			timestamp: T0 + 700,
		},
		{
			...assistantBase(fauxModelForSamples, [
				fauxThinking("Need to read the file first."),
				fauxText("Reading it now."),
				fauxToolCall("read_file", { path: "notes/ä.txt", offset: 2 }, { id: "call_u1" }),
			], "toolUse", T0 + 701),
		},
		{
			role: "toolResult",
			toolCallId: "call_u1",
			toolName: "read_file",
			content: [
				{ type: "text", text: "line two\nline three" },
				{ type: "image", data: PNG_1X1, mimeType: "image/png" },
			],
			details: { bytes: 19 },
			isError: false,
			timestamp: T0 + 702,
		},
	],
	tools: [readTool],
};
await fauxScript("usage_estimate", {
	responses: [fauxAssistantMessage("The image is a single transparent pixel; the file has two lines.", { timestamp: T0 + 703 })],
	requests: [{ context: usageEstimateContext }],
});

await fauxScript("abort", {
	responses: [
		fauxAssistantMessage("This response is long enough that it will be aborted somewhere in the middle of streaming.", {
			timestamp: T0 + 800,
		}),
	],
	requests: [{ context: simpleContext("Tell me something long.") }],
	abortAfterTextDeltas: 3,
	notes: "AbortController.abort() is called synchronously inside the for-await body right after the 3rd text_delta is received.",
});

writeJson("faux_partial_semantics.json", partialSemantics);

// ---------------------------------------------------------------------------------------------
// c. Agent events
const echoTool = {
	name: "echo",
	label: "Echo",
	description: "Echo the given text back.",
	parameters: Type.Object({ text: Type.String({ description: "Text to echo" }) }),
	async execute(toolCallId, params) {
		return { content: [{ type: "text", text: params.text }], details: { echoed: params.text, toolCallId } };
	},
};

// JSON of an AgentTool drops its functions (execute); this is exactly what the faux provider sees in
// context.tools (including `label`, which therefore counts towards faux's usage estimate).
const TOOL_BEHAVIOUR = {
	echo: "execute(toolCallId, params) returns {content:[{type:'text', text: params.text}], details:{echoed: params.text, toolCallId}}",
};

async function agentScript(name, { responses, prompt, tools = [], agentOptions = {}, onEvent, actions, notes, wrapTools }) {
	const faux = newFaux();
	faux.setResponses(responses);
	const lines = [];
	let agent;
	const liveTools = wrapTools ? wrapTools(tools, () => agent) : tools;
	agent = new core.Agent({
		initialState: { systemPrompt: "You are an agent under test.", model: faux.getModel(), tools: liveTools },
		...agentOptions,
	});
	agent.subscribe((event) => {
		lines.push(JSON.stringify(event));
		onEvent?.(event, agent);
	});
	await agent.prompt(prompt);
	await agent.waitForIdle();
	writeLines(`agent_events_${name}.jsonl`, lines);
	writeJson(`agent_events_${name}.input.json`, {
		register: FAUX_REGISTRATION,
		model: roundTrip(faux.getModel()),
		systemPrompt: "You are an agent under test.",
		agentOptions: roundTrip(agentOptions),
		tools: roundTrip(tools),
		toolBehaviour: Object.fromEntries(tools.map((t) => [t.name, TOOL_BEHAVIOUR[t.name]])),
		prompt: roundTrip(prompt),
		responses: responses.map(describeStep),
		actions: actions ?? [],
		notes,
		finalMessages: roundTrip(agent.state.messages),
		callCountAfter: faux.state.callCount,
		pendingResponsesAfter: faux.getPendingResponseCount(),
	});
	faux.unregister();
}

const prompt = (text, ts) => ({ role: "user", content: [{ type: "text", text }], timestamp: ts });

await agentScript("text", {
	responses: [fauxAssistantMessage("Hello! I am a faux agent.", { timestamp: T0 + 2001 })],
	prompt: prompt("Hello agent", T0 + 2000),
});

await agentScript("tool_call", {
	responses: [
		fauxAssistantMessage([fauxText("Echoing."), fauxToolCall("echo", { text: "héllo wörld" }, { id: "call_echo_1" })], {
			stopReason: "toolUse",
			timestamp: T0 + 3001,
		}),
		fauxAssistantMessage("The tool said: héllo wörld", { timestamp: T0 + 3002 }),
	],
	tools: [echoTool],
	prompt: prompt("Please echo 'héllo wörld'", T0 + 3000),
});

await agentScript("error", {
	responses: [fauxAssistantMessage("Starting", { stopReason: "error", errorMessage: "boom", timestamp: T0 + 4001 })],
	prompt: prompt("Trigger an error", T0 + 4000),
});

const steerMessage = { role: "user", content: "Stop! Do something else instead.", timestamp: T0 + 5500 };
function steeringTools(tools, getAgent) {
	return tools.map((tool) => ({
		...tool,
		async execute(toolCallId, params, signal, onUpdate) {
			if (toolCallId === "call_s1") getAgent().steer(steerMessage);
			return tool.execute(toolCallId, params, signal, onUpdate);
		},
	}));
}
const steeringResponses = () => [
	fauxAssistantMessage(
		[
			fauxToolCall("echo", { text: "one" }, { id: "call_s1" }),
			fauxToolCall("echo", { text: "two" }, { id: "call_s2" }),
			fauxToolCall("echo", { text: "three" }, { id: "call_s3" }),
		],
		{ stopReason: "toolUse", timestamp: T0 + 5001 },
	),
	fauxAssistantMessage("OK, doing something else.", { timestamp: T0 + 5002 }),
];
for (const [name, agentOptions] of [
	["steering", {}],
	["steering_sequential", { toolExecution: "sequential" }],
]) {
	await agentScript(name, {
		responses: steeringResponses(),
		tools: [echoTool],
		wrapTools: steeringTools,
		agentOptions,
		prompt: prompt("Echo one, two, three.", T0 + 5000),
		actions: [{ when: "inside echo.execute for toolCallId call_s1 (before it returns)", call: "agent.steer", message: steerMessage }],
		notes:
			"pi 0.73.1 does not skip the remaining tool calls of the current assistant message when steering: the steering message is injected after the turn's tool results.",
	});
}

const followUpMessage = { role: "user", content: "And one more thing: say bye.", timestamp: T0 + 6500 };
let followUpQueued = false;
await agentScript("follow_up", {
	responses: [
		fauxAssistantMessage("First answer.", { timestamp: T0 + 6001 }),
		fauxAssistantMessage("Bye!", { timestamp: T0 + 6002 }),
	],
	prompt: prompt("First question", T0 + 6000),
	onEvent(event, agent) {
		if (!followUpQueued && event.type === "message_update") {
			followUpQueued = true;
			agent.followUp(followUpMessage);
		}
	},
	actions: [{ when: "in the subscribe listener on the first message_update event", call: "agent.followUp", message: followUpMessage }],
});

// ---------------------------------------------------------------------------------------------
ai.EventStream.prototype.push = originalPush;
console.log(`pi-ai ${aiPkg.version}, pi-agent-core ${corePkg.version}, pi-coding-agent ${codingAgentVersion}`);
console.log(`wrote ${written.length} files to ${outDir}:`);
for (const f of written) console.log(`  ${f} (${fs.statSync(path.join(outDir, f)).size} bytes)`);
for (const [name, s] of Object.entries(partialSemantics)) {
	console.log(
		`  partial semantics ${name}: ${s.events} events, receive!=push at ${JSON.stringify(s.receive_differs_from_push)}, after-end!=receive at ${JSON.stringify(s.after_end_differs_from_receive)}`,
	);
}
