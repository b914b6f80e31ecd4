#!/usr/bin/env node
/*
 * mistral_capture.mjs — record what pi 0.73.1's mistral-conversations provider sends and emits.
 *
 * Input:  mistral_cases.json (written by `python -m tests.providers.fixtures_mistral`): for each
 *         case a pi Model, Context and options, the API mode ("stream" -> streamMistral,
 *         "simple" -> streamSimpleMistral) and the HTTP response to serve.
 * Output: mistral_capture.json: for each case the request pi made (method, path with query,
 *         headers, JSON body) and the AssistantMessageEvents it pushed, each serialised at push
 *         time (or {"throws": message} when the call threw before returning a stream).
 *
 * How to run (pi's packages resolve from the current directory's node_modules):
 *   cd /work/main/tests/providers && ../../.venv/bin/python fixtures_mistral.py
 *   cd /work/main/tests/pi && node ../data/pi/providers/mistral_capture.mjs \
 *       ../data/pi/providers/mistral_cases.json ../data/pi/providers/mistral_capture.json
 *
 * Date.now is pinned to 1767225600000 (as in ../capture.mjs), so message timestamps are
 * reproducible. pi's Mistral SDK retries are off (pi passes `retries: {strategy: "none"}`). Each
 * model's baseUrl is replaced by a loopback server's. This is our own code: it only calls pi's
 * public exports and observes EventStream.prototype.push.
 */
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";

const NOW_SENTINEL = 1767225600000;
Date.now = () => NOW_SENTINEL;

const [casesPath, outPath] = process.argv.slice(2);
if (!casesPath || !outPath) {
	console.error("usage: mistral_capture.mjs CASES.json OUT.json");
	process.exit(2);
}

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
const aiVersion = JSON.parse(fs.readFileSync(path.join(aiDir, "package.json"), "utf8")).version;
if (aiVersion !== "0.73.1") console.warn(`warning: expected pi-ai 0.73.1, found ${aiVersion}`);
const ai = await import(pathToFileURL(path.join(aiDir, "dist/index.js")).href);
const mistral = await import(pathToFileURL(path.join(aiDir, "dist/providers/mistral.js")).href);

// Observe events at push time, per stream.
const pushed = new WeakMap();
const originalPush = ai.EventStream.prototype.push;
ai.EventStream.prototype.push = function (event) {
	if (!pushed.has(this)) pushed.set(this, []);
	pushed.get(this).push(JSON.parse(JSON.stringify(event)));
	return originalPush.call(this, event);
};

let current = null; // { response, request }
const server = http.createServer((req, res) => {
	const chunks = [];
	req.on("data", (c) => chunks.push(c));
	req.on("end", () => {
		const body = Buffer.concat(chunks).toString("utf8");
		const headers = { ...req.headers };
		delete headers.host; // the port differs per run
		current.request = { method: req.method, path: req.url, headers, body: JSON.parse(body) };
		const { status, contentType, body: responseBody } = current.response;
		res.writeHead(status, { "content-type": contentType });
		res.end(responseBody);
	});
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const port = server.address().port;

const { cases } = JSON.parse(fs.readFileSync(casesPath, "utf8"));
const out = { piAi: aiVersion, now: NOW_SENTINEL, cases: {} };
for (const c of cases) {
	current = { response: c.response, request: null };
	const model = { ...c.model, baseUrl: `http://127.0.0.1:${port}` };
	const fn = c.mode === "simple" ? mistral.streamSimpleMistral : mistral.streamMistral;
	let stream;
	try {
		stream = fn(model, c.context, c.options);
	} catch (error) {
		out.cases[c.name] = { throws: error.message };
		continue;
	}
	const received = [];
	for await (const event of stream) received.push(event.type);
	const events = pushed.get(stream) ?? [];
	if (events.map((e) => e.type).join() !== received.join()) throw new Error(`event mismatch in ${c.name}`);
	const request = current.request;
	if (request) request.path = request.path.replace(`127.0.0.1:${port}`, "HOST");
	out.cases[c.name] = { request, events };
}
server.close();
fs.writeFileSync(outPath, JSON.stringify(out, null, 1) + "\n");
console.log(`wrote ${Object.keys(out.cases).length} cases to ${outPath}`);
