#!/usr/bin/env node
/*
 * capture.mjs: session files written and read by the real pi (npm @mariozechner/pi-coding-agent 0.73.1),
 * for pitrio's session tests (tests/sessions/storage/test_pi_compat.py).
 *
 * What it writes (into the output directory, default: this script's folder)
 *   <scenario>.jsonl          a session file written by pi's SessionManager
 *   <scenario>.pi.json        what pi sees when it opens that file: header, entries (after migration), leaf,
 *                             session name, labels, tree, branch, children, buildSessionContext(), and
 *                             buildSessionContext() for every entry as the leaf (contextsByLeaf)
 *   migrate_v1.input.jsonl,   hand-written files in pi's old formats (v1: no ids, firstKeptEntryIndex;
 *   migrate_v2.input.jsonl    v2: the hookMessage role); migrate_v<n>.jsonl is the file after pi opened
 *                             (migrated and rewrote) it
 *   torn_tail.jsonl           all_entry_types.jsonl with its last line cut in half (a crash mid-write)
 *   pitrio_written.pi.json    pi's view of pitrio_written.jsonl, the file pitrio's test writes (it must be
 *                             regenerated first, see ../README.md)
 *   behaviour.json            pi's lazy first flush observed step by step
 *
 * How to run
 *   cd /work/scratch/pi && node /work/main/tests/data/pi/sessions/capture.mjs [outDir]
 *   (pi's packages are resolved from node_modules above the current directory.)
 *
 * Determinism
 *   pi takes entry ids from crypto.randomUUID(), session ids from uuid v7 (Date.now() and
 *   crypto.getRandomValues) and timestamps from new Date(). The script replaces them while it runs:
 *   randomUUID() yields 00000001-..., 00000002-... (so entry ids are "00000001", "00000002", ... ; the
 *   counter restarts at every scenario), getRandomValues fills from a fixed LCG, and `new Date()` without
 *   arguments starts at the scenario's base time and advances one second per call. Messages carry
 *   explicit timestamps. Files are written under /tmp/pitrio-session-capture (deleted first), so the
 *   parentSession paths in forked headers are stable too. Two runs give byte-identical output.
 */
import nodeCrypto from "node:crypto";
import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const WORK = "/tmp/pitrio-session-capture";
const CWD = "/work/project";
const T0 = Date.UTC(2025, 0, 1); // 2025-01-01T00:00:00.000Z: message timestamps
const scriptDir = path.dirname(fileURLToPath(import.meta.url));
const outDir = path.resolve(process.argv.slice(2).find((a) => !a.startsWith("--")) ?? scriptDir);

// ---------------------------------------------------------------------------------------------
// Deterministic ids, random bytes and clock
let idCounter = 0;
nodeCrypto.randomUUID = () => {
	idCounter += 1;
	return `${idCounter.toString(16).padStart(8, "0")}-0000-4000-8000-000000000000`;
};
syncBuiltinESMExports();
let lcg = 1;
globalThis.crypto.getRandomValues = (array) => {
	for (let i = 0; i < array.length; i++) {
		lcg = (Math.imul(lcg, 1103515245) + 12345) >>> 0;
		array[i] = lcg >>> 24;
	}
	return array;
};
const RealDate = Date;
let clock = 0;
class CaptureDate extends RealDate {
	constructor(...args) {
		if (args.length === 0) {
			super(clock);
			clock += 1000;
		} else {
			super(...args);
		}
	}
	static now() {
		return clock;
	}
}
globalThis.Date = CaptureDate;
/** Restart ids and the clock: each scenario starts from the same state whatever ran before it. */
function resetDeterminism(base) {
	idCounter = 0;
	lcg = 1;
	clock = base;
}

// ---------------------------------------------------------------------------------------------
// pi's packages, from process.cwd()'s node_modules
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
const pkgDir = findPackageDir("@mariozechner/pi-coding-agent");
const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));
if (pkg.version !== "0.73.1") console.warn(`warning: expected pi-coding-agent 0.73.1, found ${pkg.version}`);
const { SessionManager, buildSessionContext } = await import(pathToFileURL(path.join(pkgDir, "dist/index.js")).href);

// ---------------------------------------------------------------------------------------------
// Helpers
const roundTrip = (x) => JSON.parse(JSON.stringify(x));
fs.rmSync(WORK, { recursive: true, force: true });
fs.mkdirSync(WORK, { recursive: true });
fs.mkdirSync(outDir, { recursive: true });
const written = [];
function writeJson(name, value) {
	fs.writeFileSync(path.join(outDir, name), `${JSON.stringify(value, null, 1)}\n`);
	written.push(name);
}
function copyOut(file, name) {
	fs.copyFileSync(file, path.join(outDir, name));
	written.push(name);
}
function scenarioDir(name) {
	const dir = path.join(WORK, name);
	fs.mkdirSync(dir, { recursive: true });
	return dir;
}

/** Everything pitrio's tests compare: pi's view of an opened session. */
function view(sm, { allLeaves = true } = {}) {
	const entries = sm.getEntries();
	const labels = {};
	for (const entry of entries) {
		const label = sm.getLabel(entry.id);
		if (label !== undefined) labels[entry.id] = label;
	}
	const tree = (nodes) =>
		nodes.map((node) => ({
			id: node.entry.id,
			...(node.label !== undefined ? { label: node.label, labelTimestamp: node.labelTimestamp } : {}),
			children: tree(node.children),
		}));
	const children = {};
	for (const entry of entries) children[entry.id] = sm.getChildren(entry.id).map((child) => child.id);
	return roundTrip({
		header: sm.getHeader(),
		entries,
		leafId: sm.getLeafId(),
		sessionName: sm.getSessionName() ?? null,
		labels,
		tree: tree(sm.getTree()),
		branch: sm.getBranch().map((entry) => entry.id),
		children,
		context: sm.buildSessionContext(),
		contextsByLeaf: allLeaves
			? Object.fromEntries(entries.map((entry) => [entry.id, buildSessionContext(entries, entry.id)]))
			: undefined,
	});
}

/** Open `file` with a fresh SessionManager (as a restart would) and record pi's view. */
function recordView(file, name, options) {
	resetDeterminism(T0 + 9_000_000);
	const sm = SessionManager.open(file);
	writeJson(`${name}.pi.json`, view(sm, options));
	return sm;
}

// Messages, with fixed timestamps
const usage = (input, output) => ({
	input,
	output,
	cacheRead: 0,
	cacheWrite: 0,
	totalTokens: input + output,
	cost: { input: input * 3e-6, output: output * 1.5e-5, cacheRead: 0, cacheWrite: 0, total: input * 3e-6 + output * 1.5e-5 },
});
let ts = T0;
const nextTs = () => (ts += 1000);
const user = (text) => ({ role: "user", content: text, timestamp: nextTs() });
const assistant = (content, extra = {}) => ({
	role: "assistant",
	content: typeof content === "string" ? [{ type: "text", text: content }] : content,
	api: "anthropic-messages",
	provider: "anthropic",
	model: "claude-sonnet-4-5",
	usage: usage(100, 20),
	stopReason: "stop",
	timestamp: nextTs(),
	...extra,
});
const PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

// ---------------------------------------------------------------------------------------------
// Scenario: every entry type (and an entry type from the future)
function allEntryTypes() {
	resetDeterminism(T0 + 1_000_000);
	ts = T0;
	const sm = SessionManager.create(CWD, scenarioDir("all_entry_types"));
	sm.appendModelChange("anthropic", "claude-sonnet-4-5");
	sm.appendThinkingLevelChange("high");
	const u1 = sm.appendMessage(user("Read README.md please"));
	sm.appendMessage(
		assistant(
			[
				{ type: "thinking", thinking: "The user wants the README.", thinkingSignature: "sig-1" },
				{ type: "text", text: "Reading it." },
				{ type: "toolCall", id: "call_1", name: "read", arguments: { path: "README.md" } },
			],
			{ stopReason: "toolUse" },
		),
	);
	sm.appendMessage({
		role: "toolResult",
		toolCallId: "call_1",
		toolName: "read",
		content: [{ type: "text", text: "# Project\nHello." }],
		details: { lines: 2 },
		isError: false,
		timestamp: nextTs(),
	});
	const a2 = sm.appendMessage(assistant("The README says hello."));
	sm.appendCustomEntry("my-ext", { count: 42, nested: { ok: true } });
	sm.appendCustomEntry("my-ext-no-data");
	sm.appendCustomMessageEntry("my-ext", "Injected context", true, { source: "capture" });
	sm.appendCustomMessageEntry(
		"my-ext",
		[
			{ type: "text", text: "Look at this:" },
			{ type: "image", data: PNG_1X1, mimeType: "image/png" },
		],
		false,
	);
	sm.appendMessage({
		role: "bashExecution",
		command: "ls",
		output: "README.md\nsrc",
		exitCode: 0,
		cancelled: false,
		truncated: false,
		timestamp: nextTs(),
	});
	sm.appendMessage({
		role: "bashExecution",
		command: "yes | head -c 100000000",
		output: "y\ny\n",
		exitCode: undefined,
		cancelled: true,
		truncated: true,
		fullOutputPath: "/tmp/pi-bash-1.log",
		timestamp: nextTs(),
		excludeFromContext: true,
	});
	sm.appendMessage({
		role: "custom",
		customType: "my-ext",
		content: "A custom message appended as a message entry",
		display: true,
		details: { via: "appendMessage" },
		timestamp: nextTs(),
	});
	sm.appendLabelChange(u1, "start");
	sm.appendLabelChange(a2, "answer");
	sm.appendLabelChange(a2, undefined);
	sm.appendSessionInfo("  Capture session  ");
	// An entry type pi 0.73.1 does not have: a newer version may write one.
	sm._appendEntry({
		type: "future_entry",
		id: "f0f0f0f0",
		parentId: sm.getLeafId(),
		timestamp: new Date().toISOString(),
		payload: { kind: "unknown", values: [1, 2.5, "three", null] },
	});
	sm.appendMessage({
		role: "user",
		content: [
			{ type: "text", text: "And this picture?" },
			{ type: "image", data: PNG_1X1, mimeType: "image/png" },
		],
		timestamp: nextTs(),
	});
	sm.appendMessage(assistant([], { stopReason: "error", errorMessage: "overloaded_error: Overloaded" }));
	sm.appendModelChange("openai", "gpt-4o");
	sm.appendMessage(user("Last question"));
	sm.appendMessage({ ...assistant("Last answer."), provider: "openai", model: "gpt-4o", api: "openai-responses" });
	copyOut(sm.getSessionFile(), "all_entry_types.jsonl");
	recordView(sm.getSessionFile(), "all_entry_types", { allLeaves: false });
	return sm.getSessionFile();
}

// ---------------------------------------------------------------------------------------------
// Scenario: branches, branch summaries, labels on branches, a second root
function branching() {
	resetDeterminism(T0 + 2_000_000);
	ts = T0 + 100_000;
	const sm = SessionManager.create(CWD, scenarioDir("branching"));
	sm.appendModelChange("anthropic", "claude-sonnet-4-5");
	const u1 = sm.appendMessage(user("Help me refactor auth"));
	const a1 = sm.appendMessage(assistant("Sure. Approach A or B?"));
	const u2 = sm.appendMessage(user("Let's try approach A"));
	sm.appendMessage(assistant("Approach A: done."));
	sm.branch(a1);
	const u3 = sm.appendMessage(user("Actually, approach B"));
	sm.appendMessage(assistant("Approach B: done."));
	sm.branch(u2);
	sm.appendThinkingLevelChange("medium");
	sm.appendMessage(assistant("Approach A, second attempt."));
	sm.appendLabelChange(u3, "approach-b");
	sm.branchWithSummary(a1, "Explored approach B; it broke the login flow.", { readFiles: ["auth.ts"], modifiedFiles: ["login.ts"] }, false);
	sm.appendMessage(user("Try approach C"));
	sm.appendMessage(assistant("Approach C: done."));
	sm.branchWithSummary(u1, "", undefined, undefined);
	sm.appendMessage(user("A branch after an empty summary"));
	sm.resetLeaf();
	sm.appendMessage(user("A fresh start (second root)"));
	sm.appendMessage(assistant("Fresh answer."));
	sm.branchWithSummary(null, "Summary written by an extension, branched from the root.", { custom: 1 }, true);
	sm.appendMessage(user("Continue from the root summary"));
	copyOut(sm.getSessionFile(), "branching.jsonl");
	recordView(sm.getSessionFile(), "branching");
	return sm;
}

// ---------------------------------------------------------------------------------------------
// Scenario: compactions with kept entries, a later compaction, branches around them
function compaction() {
	resetDeterminism(T0 + 3_000_000);
	ts = T0 + 200_000;
	const sm = SessionManager.create(CWD, scenarioDir("compaction"));
	sm.appendThinkingLevelChange("low");
	sm.appendModelChange("anthropic", "claude-sonnet-4-5");
	sm.appendMessage(user("First task"));
	const a1 = sm.appendMessage(assistant("First answer"));
	const u2 = sm.appendMessage(user("Second task"));
	sm.appendCustomMessageEntry("notes", "A note kept after compaction", true);
	sm.appendMessage(assistant("Second answer"));
	sm.appendMessage(user("Third task"));
	const a3 = sm.appendMessage(assistant("Third answer"));
	const c1 = sm.appendCompaction("The user asked for three tasks; the first is done.", u2, 5000, {
		readFiles: ["a.txt"],
		modifiedFiles: [],
	});
	const u4 = sm.appendMessage(user("Fourth task"));
	sm.appendMessage(assistant("Fourth answer"));
	sm.appendThinkingLevelChange("high");
	sm.appendCompaction("Four tasks done.", u4, 8000, undefined, true);
	sm.appendMessage(user("Fifth task"));
	sm.appendMessage(assistant("Fifth answer"));
	sm.branch(a3);
	sm.appendMessage(user("A branch from before the compactions"));
	sm.branch(a1);
	sm.appendCompaction("Its first kept entry is on another branch.", u4, 123);
	sm.appendMessage(user("After a compaction that keeps nothing"));
	sm.branch(c1);
	sm.branchWithSummary(c1, "A branch summary after a compaction.");
	sm.appendMessage(user("Last"));
	copyOut(sm.getSessionFile(), "compaction.jsonl");
	recordView(sm.getSessionFile(), "compaction");
	return sm;
}

// ---------------------------------------------------------------------------------------------
// Scenario: old formats, migrated by pi when it opens them
const lines = (objects) => `${objects.map((o) => JSON.stringify(o)).join("\n")}\n`;
const iso = (ms) => new RealDate(ms).toISOString();
function migrateV1() {
	ts = T0 + 300_000;
	const t = (n) => iso(T0 + 300_000 + n * 1000);
	const objects = [
		{ type: "session", id: "0a1b2c3d-0000-4000-8000-00000000v1v1", timestamp: t(0), cwd: CWD },
		{ type: "model_change", timestamp: t(1), provider: "anthropic", modelId: "claude-sonnet-4-5" },
		{ type: "message", timestamp: t(2), message: user("Old question one") },
		{ type: "message", timestamp: t(3), message: assistant("Old answer one") },
		{ type: "message", timestamp: t(4), message: user("Old question two") },
		{ type: "message", timestamp: t(5), message: assistant("Old answer two") },
		// firstKeptEntryIndex counts the header: 4 is "Old question two"
		{ type: "compaction", timestamp: t(6), summary: "Question one was answered.", firstKeptEntryIndex: 4, tokensBefore: 1200 },
		{ type: "thinking_level_change", timestamp: t(7), thinkingLevel: "minimal" },
		{ type: "message", timestamp: t(8), message: { role: "hookMessage", customType: "old-hook", content: "A hook message", display: true, timestamp: nextTs() } },
		{ type: "message", timestamp: t(9), message: user("Old question three") },
		{ type: "message", timestamp: t(10), message: assistant("Old answer three") },
	];
	const input = lines(objects);
	fs.writeFileSync(path.join(outDir, "migrate_v1.input.jsonl"), input);
	written.push("migrate_v1.input.jsonl");
	const file = path.join(scenarioDir("migrate_v1"), "migrate_v1.jsonl");
	fs.writeFileSync(file, input);
	recordView(file, "migrate_v1");
	copyOut(file, "migrate_v1.jsonl");
}

function migrateV2() {
	ts = T0 + 400_000;
	const t = (n) => iso(T0 + 400_000 + n * 1000);
	const objects = [
		{ type: "session", version: 2, id: "0a1b2c3d-0000-4000-8000-00000000v2v2", timestamp: t(0), cwd: CWD },
		{ type: "message", id: "aaaa0001", parentId: null, timestamp: t(1), message: user("v2 question") },
		{ type: "message", id: "aaaa0002", parentId: "aaaa0001", timestamp: t(2), message: assistant("v2 answer") },
		{ type: "message", id: "aaaa0003", parentId: "aaaa0002", timestamp: t(3), message: { role: "hookMessage", customType: "old-hook", content: [{ type: "text", text: "hook block" }], display: false, details: { a: 1 }, timestamp: nextTs() } },
		{ type: "message", id: "aaaa0004", parentId: "aaaa0002", timestamp: t(4), message: user("v2 other branch") },
		{ type: "label", id: "aaaa0005", parentId: "aaaa0004", timestamp: t(5), targetId: "aaaa0001", label: "first" },
		{ type: "message", id: "aaaa0006", parentId: "aaaa0005", timestamp: t(6), message: assistant("v2 other answer") },
	];
	const input = lines(objects);
	fs.writeFileSync(path.join(outDir, "migrate_v2.input.jsonl"), input);
	written.push("migrate_v2.input.jsonl");
	const file = path.join(scenarioDir("migrate_v2"), "migrate_v2.jsonl");
	fs.writeFileSync(file, input);
	recordView(file, "migrate_v2");
	copyOut(file, "migrate_v2.jsonl");
}

// ---------------------------------------------------------------------------------------------
// Scenario: forks (createBranchedSession and forkFrom)
function forks(branchingSm) {
	// createBranchedSession of the "approach B" branch: its path carries the label "approach-b"
	resetDeterminism(T0 + 5_000_000);
	const source = branchingSm.getSessionFile();
	const sm = SessionManager.open(source);
	const entries = sm.getEntries();
	const approachB = entries.find((e) => e.type === "message" && e.message.role === "assistant" && e.message.content[0]?.text === "Approach B: done.");
	const newFile = sm.createBranchedSession(approachB.id);
	copyOut(newFile, "fork_branched.jsonl");
	recordView(newFile, "fork_branched");

	resetDeterminism(T0 + 6_000_000);
	const forked = SessionManager.forkFrom(source, "/work/other-project", scenarioDir("fork_from"));
	copyOut(forked.getSessionFile(), "fork_from.jsonl");
	recordView(forked.getSessionFile(), "fork_from", { allLeaves: false });
}

// ---------------------------------------------------------------------------------------------
// Scenario: a torn last line (what a crash in the middle of a write leaves)
function tornTail(allEntryTypesFile) {
	const data = fs.readFileSync(allEntryTypesFile, "utf8");
	const body = data.slice(0, -1);
	const lastStart = body.lastIndexOf("\n") + 1;
	const torn = data.slice(0, lastStart + Math.floor((data.length - lastStart) / 2));
	const file = path.join(scenarioDir("torn_tail"), "torn_tail.jsonl");
	fs.writeFileSync(file, torn);
	copyOut(file, "torn_tail.jsonl");
	recordView(file, "torn_tail", { allLeaves: false });
}

// ---------------------------------------------------------------------------------------------
// pitrio's file, read by pi
function pitrioWritten() {
	const source = path.join(outDir, "pitrio_written.jsonl");
	if (!fs.existsSync(source)) {
		console.warn("pitrio_written.jsonl not found: run tests/sessions/session_script.py first (see README)");
		return;
	}
	const file = path.join(scenarioDir("pitrio_written"), "pitrio_written.jsonl");
	fs.copyFileSync(source, file);
	recordView(file, "pitrio_written");
	if (fs.readFileSync(file, "utf8") !== fs.readFileSync(source, "utf8")) throw new Error("pi rewrote pitrio_written.jsonl");
}

// ---------------------------------------------------------------------------------------------
// pi's lazy first flush, step by step
function behaviour() {
	resetDeterminism(T0 + 7_000_000);
	ts = T0 + 700_000;
	const sm = SessionManager.create(CWD, scenarioDir("behaviour"));
	const file = sm.getSessionFile();
	const lineCount = () => (fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n").length : null);
	const steps = [];
	const step = (what, fn) => {
		fn();
		steps.push({ after: what, fileLines: lineCount() });
	};
	step("create", () => {});
	step("appendModelChange", () => sm.appendModelChange("anthropic", "claude-sonnet-4-5"));
	step("appendMessage(user)", () => sm.appendMessage(user("hi")));
	step("appendMessage(assistant)", () => sm.appendMessage(assistant("hello")));
	step("appendMessage(user)", () => sm.appendMessage(user("again")));
	step("appendLabelChange", () => sm.appendLabelChange(sm.getLeafId(), "x"));
	step("newSession", () => sm.newSession());
	writeJson("behaviour.json", { lazyFlush: steps });
}

const allFile = allEntryTypes();
const branchingSm = branching();
compaction();
migrateV1();
migrateV2();
forks(branchingSm);
tornTail(allFile);
pitrioWritten();
behaviour();

globalThis.Date = RealDate;
console.log(`pi-coding-agent ${pkg.version}: wrote ${written.length} files to ${outDir}:`);
for (const f of written) console.log(`  ${f} (${fs.statSync(path.join(outDir, f)).size} bytes)`);
