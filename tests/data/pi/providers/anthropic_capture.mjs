#!/usr/bin/env node
/*
 * anthropic_capture.mjs — record what pi-ai 0.73.1's anthropic-messages provider does for the
 * cases in anthropic_cases.json (written by tests/providers/fixtures_anthropic.py).
 *
 * For every case it starts a loopback HTTP server that answers with the case's SSE text (or its
 * HTTP error status and body), points a catalogue model's baseUrl at it, runs pi's
 * streamAnthropic / streamSimpleAnthropic, and writes anthropic_<case>.json:
 *   { request: {method, path, headers, body}, events: [<event JSON at push time>...], result }
 *
 * How to run (node >= 20; pi is resolved from the current directory's node_modules):
 *   cd /work/scratch/pi && node /work/main/tests/data/pi/providers/anthropic_capture.mjs
 *
 * Determinism: Date.now is pinned to 1767225600000 (pi stamps the message with it); requests carry
 * apiKey "sk-ant-api03-test" and maxRetries 0. Headers that depend on the machine or the SDK build
 * (user-agent, x-stainless-*, host, content-length, connection) are left out of the record.
 * Events are serialised when pi pushes them (pi's partial message is one mutable object, so a
 * later serialisation would show later text). Our own code; it only calls pi's public exports.
 */
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const NOW_SENTINEL = 1767225600000;
Date.now = () => NOW_SENTINEL;
const here = path.dirname(fileURLToPath(import.meta.url));

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
const aiDir = findPackageDir("@mariozechner/pi-ai");
const version = JSON.parse(fs.readFileSync(path.join(aiDir, "package.json"), "utf8")).version;
if (version !== "0.73.1") console.warn(`warning: expected pi-ai 0.73.1, found ${version}`);
const ai = await import(pathToFileURL(path.join(aiDir, "dist/index.js")).href);
const anthropic = await import(pathToFileURL(path.join(aiDir, "dist/providers/anthropic.js")).href);

const pushLog = new WeakMap();
const originalPush = ai.EventStream.prototype.push;
ai.EventStream.prototype.push = function (event) {
	if (!this.done) {
		if (!pushLog.has(this)) pushLog.set(this, []);
		pushLog.get(this).push(JSON.parse(JSON.stringify(event)));
	}
	return originalPush.call(this, event);
};

const VOLATILE = /^(user-agent|x-stainless-.*|host|content-length|connection)$/;

async function run(name, c) {
	let request = null;
	const server = http.createServer((req, res) => {
		const parts = [];
		req.on("data", (d) => parts.push(d));
		req.on("end", () => {
			const headers = {};
			for (const [k, v] of Object.entries(req.headers)) if (!VOLATILE.test(k)) headers[k] = v;
			request = { method: req.method, path: req.url, headers, body: JSON.parse(Buffer.concat(parts).toString("utf8")) };
			if (c.sse !== undefined) {
				res.writeHead(200, { "content-type": "text/event-stream" });
				res.end(c.sse);
			} else {
				res.writeHead(c.status, { "content-type": "application/json" });
				res.end(c.body);
			}
		});
	});
	await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
	const model = { ...ai.getModel("anthropic", c.model), baseUrl: `http://127.0.0.1:${server.address().port}` };
	const options = { ...c.options, apiKey: "sk-ant-api03-test", maxRetries: 0 };
	const fn = c.simple ? anthropic.streamSimpleAnthropic : anthropic.streamAnthropic;
	const stream = fn(model, c.context, options);
	for await (const _ of stream) {
	}
	const result = await stream.result();
	server.close();
	const out = { request, events: pushLog.get(stream) ?? [], result: JSON.parse(JSON.stringify(result)) };
	fs.writeFileSync(path.join(here, `anthropic_${name}.json`), JSON.stringify(out, null, 1) + "\n");
	console.log(`anthropic_${name}.json: ${out.events.length} events, ${result.stopReason}`);
}

delete process.env.PI_CACHE_RETENTION;
const cases = JSON.parse(fs.readFileSync(path.join(here, "anthropic_cases.json"), "utf8"));
for (const name of Object.keys(cases).sort()) await run(name, cases[name]);
