#!/usr/bin/env node
/*
 * openai_completions_capture.mjs — run pi-ai 0.73.1's `openai-completions` provider against a
 * loopback HTTP server and record what it sends and what it emits, for pitrio's tests.
 *
 * Input:  openai_completions.input.json (written by tests/providers/fixtures_openai_completions.py
 *         write-pi-input): cases of {name, api: "simple"|"stream", model, context, options, response}.
 *         `{server}` in a model's baseUrl stands for this script's server origin; the response is
 *         {status: 200, sse: "<event-stream text>"} or {status, json: <error body>}.
 * Output: openai_completions.output.json: {name: {request: {path, authorization, affinity, body},
 *         events: [...]}}. Events are serialised when pi's provider pushes them (not when a
 *         consumer reads them: pi mutates the partial message in place).
 *
 * How to run (node >= 20):
 *   cd /work/scratch/pi && node /work/main/tests/data/pi/providers/openai_completions_capture.mjs \
 *       /work/main/tests/data/pi/providers
 *
 * Date.now() is pinned to 1767225600000 (as in ../capture.mjs): that value in the output means
 * "pi took the current time here".
 */
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";

const NOW_SENTINEL = 1767225600000;
Date.now = () => NOW_SENTINEL;

const dir = path.resolve(process.argv[2] ?? ".");

function findPackage(name) {
	let d = process.cwd();
	while (true) {
		const candidate = path.join(d, "node_modules", ...name.split("/"));
		if (fs.existsSync(path.join(candidate, "package.json"))) return candidate;
		const parent = path.dirname(d);
		if (parent === d) throw new Error(`cannot find ${name} above ${process.cwd()}`);
		d = parent;
	}
}
const aiDir = findPackage("@mariozechner/pi-ai");
const aiVersion = JSON.parse(fs.readFileSync(path.join(aiDir, "package.json"), "utf8")).version;
if (aiVersion !== "0.73.1") console.warn(`warning: expected pi-ai 0.73.1, found ${aiVersion}`);
const ai = await import(pathToFileURL(path.join(aiDir, "dist", "index.js")).href);

// Observation only: serialise each event when it is pushed, per stream.
const pushLog = new Map();
const originalPush = ai.EventStream.prototype.push;
ai.EventStream.prototype.push = function (event) {
	if (!this.done) {
		if (!pushLog.has(this)) pushLog.set(this, []);
		pushLog.get(this).push(JSON.parse(JSON.stringify(event)));
	}
	return originalPush.call(this, event);
};

const AFFINITY_HEADERS = ["session_id", "x-client-request-id", "x-session-affinity"];
let current = null;
const requests = [];
const server = http.createServer((req, res) => {
	const chunks = [];
	req.on("data", (c) => chunks.push(c));
	req.on("end", () => {
		requests.push({
			path: req.url,
			authorization: req.headers.authorization ?? null,
			affinity: Object.fromEntries(
				AFFINITY_HEADERS.filter((h) => h in req.headers).map((h) => [h, req.headers[h]]),
			),
			body: JSON.parse(Buffer.concat(chunks).toString("utf8")),
		});
		const response = current.response;
		if (response.sse !== undefined) {
			res.writeHead(response.status, { "content-type": "text/event-stream" });
			res.end(response.sse);
		} else {
			res.writeHead(response.status, { "content-type": "application/json" });
			res.end(JSON.stringify(response.json));
		}
	});
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const origin = `http://127.0.0.1:${server.address().port}`;

const cases = JSON.parse(fs.readFileSync(path.join(dir, "openai_completions.input.json"), "utf8"));
const output = {};
for (const testCase of cases) {
	current = testCase;
	requests.length = 0;
	pushLog.clear();
	const model = { ...testCase.model, baseUrl: testCase.model.baseUrl.replace("{server}", origin) };
	const fn = testCase.api === "stream" ? ai.stream : ai.streamSimple;
	const outer = fn(model, testCase.context, testCase.options);
	for await (const _event of outer) {
		// drain
	}
	await outer.result();
	const inner = [...pushLog.entries()].filter(([stream]) => stream !== outer);
	if (inner.length !== 1) throw new Error(`${testCase.name}: expected one provider stream`);
	output[testCase.name] = { request: requests[0] ?? null, events: inner[0][1] };
	if (requests.length !== 1) throw new Error(`${testCase.name}: ${requests.length} requests`);
}
server.close();
ai.EventStream.prototype.push = originalPush;
const outPath = path.join(dir, "openai_completions.output.json");
fs.writeFileSync(outPath, JSON.stringify(output, null, 1) + "\n");
console.log(`wrote ${outPath} (${cases.length} cases)`);
