#!/usr/bin/env node
/*
 * bedrock_capture.mjs — record what pi 0.73.1's bedrock-converse-stream provider sends and emits.
 *
 * Input:  bedrock_cases.json (written by `python tests/providers/fixtures_bedrock.py`): for each
 *         case a pi Model, Context and options, the API mode ("stream" -> streamBedrock,
 *         "simple" -> streamSimpleBedrock) and the event-stream response to serve (base64).
 * Output: bedrock_capture.json: for each case the request the AWS SDK made for pi (method, path,
 *         JSON body) and the AssistantMessageEvents pi pushed, each serialised at push time.
 *
 * How to run (pi's packages resolve from the current directory's node_modules):
 *   cd <dir with pi 0.73.1 in node_modules> && \
 *     AWS_BEDROCK_SKIP_AUTH=1 AWS_BEDROCK_FORCE_HTTP1=1 node \
 *     /work/main/tests/data/pi/providers/bedrock_capture.mjs \
 *     /work/main/tests/data/pi/providers/bedrock_cases.json \
 *     /work/main/tests/data/pi/providers/bedrock_capture.json
 *
 * AWS_BEDROCK_SKIP_AUTH=1 makes pi sign with dummy keys (no credentials needed);
 * AWS_BEDROCK_FORCE_HTTP1=1 makes the SDK speak HTTP/1.1 to the plain loopback server.
 * Date.now is pinned to 1767225600000 (as in ../capture.mjs). Each model's baseUrl is replaced
 * by a loopback server's. This is our own code: it only calls pi's public exports and observes
 * EventStream.prototype.push.
 */
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";

const NOW_SENTINEL = 1767225600000;
Date.now = () => NOW_SENTINEL;

const [casesPath, outPath] = process.argv.slice(2);
if (!casesPath || !outPath) {
	console.error("usage: bedrock_capture.mjs CASES.json OUT.json");
	process.exit(2);
}
for (const name of ["AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK"]) {
	delete process.env[name];
}
process.env.AWS_BEDROCK_SKIP_AUTH = "1";
process.env.AWS_BEDROCK_FORCE_HTTP1 = "1";

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
const bedrock = await import(pathToFileURL(path.join(aiDir, "dist/providers/amazon-bedrock.js")).href);

const pushed = new WeakMap();
const originalPush = ai.EventStream.prototype.push;
ai.EventStream.prototype.push = function (event) {
	if (!pushed.has(this)) pushed.set(this, []);
	pushed.get(this).push(JSON.parse(JSON.stringify(event)));
	return originalPush.call(this, event);
};

let current = null;
const server = http.createServer((req, res) => {
	const chunks = [];
	req.on("data", (c) => chunks.push(c));
	req.on("end", () => {
		const body = Buffer.concat(chunks).toString("utf8");
		current.request = { method: req.method, path: req.url, body: JSON.parse(body) };
		const { status, contentType, body: responseBody } = current.response;
		res.writeHead(status, { "content-type": contentType });
		res.end(Buffer.from(responseBody, "base64"));
	});
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const port = server.address().port;

const { cases } = JSON.parse(fs.readFileSync(casesPath, "utf8"));
const out = { piAi: aiVersion, now: NOW_SENTINEL, cases: {} };
for (const c of cases) {
	current = { response: c.response, request: null };
	const model = { ...c.model, baseUrl: `http://127.0.0.1:${port}` };
	const fn = c.mode === "simple" ? bedrock.streamSimpleBedrock : bedrock.streamBedrock;
	const stream = fn(model, c.context, c.options);
	const received = [];
	for await (const event of stream) received.push(event.type);
	const events = pushed.get(stream) ?? [];
	if (events.map((e) => e.type).join() !== received.join()) throw new Error(`event mismatch in ${c.name}`);
	out.cases[c.name] = { request: current.request, events };
}
server.close();
fs.writeFileSync(outPath, JSON.stringify(out, null, 1) + "\n");
console.log(`wrote ${Object.keys(out.cases).length} cases to ${outPath}`);
