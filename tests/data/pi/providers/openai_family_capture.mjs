#!/usr/bin/env node
/*
 * openai_family_capture.mjs — run pi 0.73.1's azure-openai-responses and
 * openai-codex-responses providers against recorded streams and write down what they sent and
 * what they emitted.
 *
 * Input:  openai_family.input.json, written from tests/providers/fixtures_codex.py: a list of
 *         cases, each with the API ("azure" or "codex"), a pi Model, Context and options, the
 *         function to call ("stream" or "simple") and the SSE body a loopback server answers.
 * Output: openai_family.pi.json: for each case the request pi made (method, path with query,
 *         headers, JSON body), every AssistantMessageEvent as serialised when pi pushed it,
 *         and the final message from stream.result().
 *
 * How to run (pi's packages resolve from the current directory's node_modules):
 *   cd /work/main && .venv/bin/python -c "import sys; sys.path[:0] = ['tests', 'tests/providers']; \
 *       import fixtures_codex as f; f.write_pi_input()"
 *   cd /work/main/tests/pi && node ../data/pi/providers/openai_family_capture.mjs \
 *       ../data/pi/providers/openai_family.input.json ../data/pi/providers/openai_family.pi.json
 *
 * Date.now is pinned to 1767225600000 (as in ../capture.mjs) so message timestamps repeat;
 * the AZURE_OPENAI_* variables and PI_CACHE_RETENTION are cleared. Only pi's public exports
 * are called; EventStream.prototype.push is wrapped to observe events, never changed.
 */
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";

const NOW = 1767225600000;
Date.now = () => NOW;
for (const name of Object.keys(process.env)) {
	if (name.startsWith("AZURE_OPENAI_")) delete process.env[name];
}
delete process.env.PI_CACHE_RETENTION;

const [inputPath, outputPath] = process.argv.slice(2);
if (!inputPath || !outputPath) {
	console.error("usage: openai_family_capture.mjs INPUT.json OUTPUT.json");
	process.exit(2);
}

function packageDir(name) {
	for (let dir = process.cwd(); ; dir = path.dirname(dir)) {
		const candidate = path.join(dir, "node_modules", ...name.split("/"));
		if (fs.existsSync(path.join(candidate, "package.json"))) return candidate;
		if (path.dirname(dir) === dir) throw new Error(`${name} not found above ${process.cwd()}`);
	}
}
const aiDir = packageDir("@mariozechner/pi-ai");
const version = JSON.parse(fs.readFileSync(path.join(aiDir, "package.json"), "utf8")).version;
if (version !== "0.73.1") console.warn(`warning: expected pi-ai 0.73.1, found ${version}`);
const load = (file) => import(pathToFileURL(path.join(aiDir, "dist", file)).href);
const ai = await load("index.js");
const azure = await load("providers/azure-openai-responses.js");
const codex = await load("providers/openai-codex-responses.js");
const functions = {
	azure: { stream: azure.streamAzureOpenAIResponses, simple: azure.streamSimpleAzureOpenAIResponses },
	codex: { stream: codex.streamOpenAICodexResponses, simple: codex.streamSimpleOpenAICodexResponses },
};
const basePaths = { azure: "/openai/v1", codex: "/backend-api" };

// One stream runs at a time; every push is serialised into the current log.
let log = null;
const push = ai.EventStream.prototype.push;
ai.EventStream.prototype.push = function (event) {
	log?.push(JSON.parse(JSON.stringify(event)));
	return push.call(this, event);
};

let current = null;
const server = http.createServer((req, res) => {
	const chunks = [];
	req.on("data", (chunk) => chunks.push(chunk));
	req.on("end", () => {
		const headers = { ...req.headers };
		delete headers.host;
		delete headers["content-length"];
		const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
		current.request = { method: req.method, path: req.url, headers, body };
		res.writeHead(200, { "content-type": "text/event-stream" });
		res.end(current.sse);
	});
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const { port } = server.address();

const cases = JSON.parse(fs.readFileSync(inputPath, "utf8"));
const out = { piAi: version, now: NOW, cases: {} };
for (const c of cases) {
	current = { sse: c.sse, request: null };
	log = [];
	const model = { ...c.model, baseUrl: `http://127.0.0.1:${port}${basePaths[c.api]}` };
	const stream = functions[c.api][c.fn](model, c.context, c.options);
	const received = [];
	for await (const event of stream) received.push(event.type);
	const result = JSON.parse(JSON.stringify(await stream.result()));
	if (log.map((e) => e.type).join() !== received.join()) throw new Error(`push/receive mismatch in ${c.name}`);
	out.cases[c.name] = { request: current.request, events: log, result };
	log = null;
}
server.close();
fs.writeFileSync(outputPath, JSON.stringify(out, null, 1) + "\n");
console.log(`wrote ${cases.length} cases to ${outputPath}`);
