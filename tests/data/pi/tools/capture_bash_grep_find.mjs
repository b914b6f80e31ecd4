#!/usr/bin/env node
/*
 * capture_bash_grep_find.mjs — record what pi 0.73.1's own bash, grep and find tools return for a fixed set of
 * cases, for pitrio's tests (tests/tools/builtin/test_bash.py, test_grep.py, test_find.py).
 *
 * How to run (node >= 20; pi's packages are resolved from node_modules above the current directory). pi's grep
 * needs `rg` and its find needs `fd` on PATH (else it tries to download them). Use the rg of the `ripgrep` PyPI
 * package and Debian's fd-find; Debian's fd 8.6 lacks `--no-require-git` (fd 8.7), which changes nothing in a git
 * repository, and every tree below is one, so a wrapper drops that flag:
 *   mkdir -p /tmp/capbin && ln -sf /work/main/.venv/bin/rg /tmp/capbin/rg
 *   printf '#!/bin/sh\nfor a in "$@"; do shift; [ "$a" = --no-require-git ] || set -- "$@" "$a"; done\nexec fdfind "$@"\n' > /tmp/capbin/fd
 *   chmod +x /tmp/capbin/fd
 *   cd /work/pi && PATH=/tmp/capbin:$PATH node /work/main/tests/data/pi/tools/capture_bash_grep_find.mjs /work/main/tests/data/pi/tools
 *
 * Output: bash_cases.json, grep_cases.json, find_cases.json, each
 *   {piVersion, tool: {name, label, description, parameters}, cases: [{name, setup, args, options?, result | error}]}
 *   setup    files to create under a fresh root directory ("$ROOT") before the call: {path, text} | {path, dir: true}
 *            | {path, lines: {prefix, count, width?}} (lines `${prefix}${i}` padded with "x" to `width` characters,
 *            each ending in "\n")
 *   options  tool options (bash: commandPrefix)
 *   result   {content, details} as JSON.stringify makes them; error: the thrown Error's message
 * Absolute paths under the root are written as "$ROOT", bash's temp files as "$TMPFILE" (with the SHA-256 of the
 * file's bytes in `fullOutputSha256`). grep and find print files in the order rg and fd find them, which is not
 * fixed when several files match; `ordered: false` marks those cases.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

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
const piDir = findPackageDir("@mariozechner/pi-coding-agent");
const piVersion = JSON.parse(fs.readFileSync(path.join(piDir, "package.json"), "utf8")).version;
const tools = await import(pathToFileURL(path.join(piDir, "dist/core/tools/index.js")).href);
process.env.PI_OFFLINE = "1"; // never download rg or fd

const outDir = path.resolve(process.argv[2] ?? ".");
const ROOT = path.join(fs.realpathSync(os.tmpdir()), "pitrio-bgf-capture");
const TMPFILE = new RegExp(`${os.tmpdir().replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/pi-bash-[0-9a-f]{16}\\.log`, "g");

function makeTree(setup) {
	fs.rmSync(ROOT, { recursive: true, force: true });
	fs.mkdirSync(ROOT, { recursive: true });
	for (const item of setup) {
		const target = path.join(ROOT, item.path);
		if (item.dir) {
			fs.mkdirSync(target, { recursive: true });
			continue;
		}
		fs.mkdirSync(path.dirname(target), { recursive: true });
		let text = item.text;
		if (item.lines) {
			const { prefix, count, width } = item.lines;
			text = "";
			for (let i = 1; i <= count; i++) {
				const line = `${prefix}${i}`;
				text += (width ? line.padEnd(width, "x") : line) + "\n";
			}
		}
		fs.writeFileSync(target, text);
	}
}

function normalize(value, extra) {
	const json = JSON.stringify(value ?? null);
	const rootPattern = new RegExp(ROOT.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "g");
	const tmpfiles = new Set();
	const out = json.replace(TMPFILE, (m) => {
		tmpfiles.add(m);
		return "$TMPFILE";
	});
	for (const file of tmpfiles) extra.fullOutputSha256 = createHash("sha256").update(fs.readFileSync(file)).digest("hex");
	return JSON.parse(out.replace(rootPattern, "$ROOT"));
}

async function run(create, c) {
	makeTree(c.setup ?? []);
	const tool = create(ROOT, c.options);
	const record = { name: c.name, setup: c.setup ?? [], args: c.args };
	if (c.options) record.options = c.options;
	if (c.ordered === false) record.ordered = false;
	const extra = {};
	try {
		const result = await tool.execute("call-1", c.args, undefined, undefined);
		record.result = normalize({ content: result.content, details: result.details }, extra);
	} catch (err) {
		record.error = normalize(err instanceof Error ? err.message : String(err), extra);
	}
	Object.assign(record, extra);
	return record;
}

function describe(tool) {
	return JSON.parse(
		JSON.stringify({ name: tool.name, label: tool.label, description: tool.description, parameters: tool.parameters }),
	);
}

async function capture(file, create, cases) {
	const out = { piVersion, tool: describe(create(ROOT)), cases: [] };
	for (const c of cases) out.cases.push(await run(create, c));
	fs.writeFileSync(path.join(outDir, file), `${JSON.stringify(out, null, 1)}\n`);
}

// ---------------------------------------------------------------------------------------------
const bashCases = [
	{ name: "stdout_and_stderr", args: { command: "echo out; sleep 0.2; echo err >&2" } },
	{ name: "no_output", args: { command: "true" } },
	{ name: "cwd", args: { command: "pwd" } },
	{ name: "exit_code_with_output", args: { command: "echo partial; exit 3" } },
	{ name: "exit_code_without_output", args: { command: "exit 7" } },
	{ name: "killed_by_signal", args: { command: "echo before; kill -9 $$" } },
	{ name: "timeout", args: { command: "echo started; sleep 30", timeout: 0.5 } },
	{ name: "timeout_integer", args: { command: "sleep 30", timeout: 1 } },
	{ name: "many_lines", args: { command: "seq 1 3000" } },
	{ name: "many_lines_failing", args: { command: "seq 1 2500; exit 1" } },
	{ name: "many_bytes", args: { command: "for i in $(seq 1 1000); do printf '%0100d\\n' $i; done" } },
	{ name: "one_huge_line", args: { command: "head -c 60000 /dev/zero | tr '\\0' a" } },
	{ name: "invalid_utf8", args: { command: "printf 'a\\377b\\n\\303'" } },
	{ name: "command_prefix", args: { command: 'echo "$GREETING"' }, options: { commandPrefix: "GREETING=hello" } },
	{ name: "trailing_newlines", args: { command: "printf 'x\\n\\n\\n'" } },
];

// A small git repository for grep and find.
const repo = [
	{ path: ".git/HEAD", text: "ref: refs/heads/main\n" },
	{ path: ".gitignore", text: "ignored/\n*.log\n!keep.log\n" },
	{ path: "src/app.py", text: "import util\n\ndef foo():\n    return util.bar()\n\nclass Foo:\n    pass\n" },
	{ path: "src/util.py", text: "def bar():\n    return 'foo'\n" },
	{ path: "src/nested/.gitignore", text: "*.tmp\n" },
	{ path: "src/nested/deep.py", text: "FOO = 1\n" },
	{ path: "src/nested/scratch.tmp", text: "foo scratch\n" },
	{ path: "ignored/secret.py", text: "foo secret\n" },
	{ path: "debug.log", text: "foo log\n" },
	{ path: "keep.log", text: "foo kept\n" },
	{ path: ".hidden/h.py", text: "foo hidden\n" },
	{ path: "README.md", text: "# Project\nUse foo() to get bar.\n" },
	{ path: "a-b.txt", text: "dash\n" },
	{ path: "a/b.txt", text: "slash\n" },
];

const grepCases = [
	{ name: "basic", setup: repo, args: { pattern: "foo" }, ordered: false },
	{ name: "ignore_case", setup: repo, args: { pattern: "foo", ignoreCase: true }, ordered: false },
	{ name: "in_file", setup: repo, args: { pattern: "o", path: "src/app.py" } },
	{ name: "in_subdir", setup: repo, args: { pattern: "foo|bar", path: "src" }, ordered: false },
	{ name: "glob", setup: repo, args: { pattern: "def", glob: "*.py" }, ordered: false },
	{ name: "glob_path", setup: repo, args: { pattern: "def", glob: "**/util.py" } },
	{ name: "literal", setup: [...repo, { path: "lit.txt", text: "a.b(c\naxb(c\n" }], args: { pattern: "a.b(", literal: true } },
	{ name: "regex", setup: [{ path: "lit.txt", text: "a.b(c\naxb(c\nab\n" }], args: { pattern: "a.b\\(" } },
	{ name: "context", setup: [{ path: "f.txt", lines: { prefix: "line", count: 12 } }], args: { pattern: "line(1|3|4|12)$", context: 1 } },
	{ name: "context_two", setup: [{ path: "f.txt", text: "a\nmatch\nb\nc\nd\ne\nmatch\n" }], args: { pattern: "match", context: 2 } },
	{ name: "crlf", setup: [{ path: "w.txt", text: "one\r\ntwo match\r\nthree\r\n" }], args: { pattern: "match", context: 1 } },
	{ name: "crlf_no_context", setup: [{ path: "w.txt", text: "one\r\ntwo match\r\nthree\r\n" }], args: { pattern: "match" } },
	{ name: "limit", setup: [{ path: "f.txt", lines: { prefix: "hit", count: 10 } }], args: { pattern: "hit", limit: 3 } },
	{ name: "default_limit", setup: [{ path: "f.txt", lines: { prefix: "hit", count: 150 } }], args: { pattern: "hit" } },
	{ name: "long_line", setup: [{ path: "f.txt", text: `short hit\n${"y".repeat(600)} hit\n` }], args: { pattern: "hit" } },
	{ name: "bytes_limit", setup: [{ path: "f.txt", lines: { prefix: "hit", count: 130, width: 490 } }], args: { pattern: "hit", limit: 200 } },
	{ name: "no_matches", setup: repo, args: { pattern: "nothing-matches-this" } },
	{ name: "ignored_only", setup: repo, args: { pattern: "secret" } },
	{ name: "git_dir", setup: repo, args: { pattern: "refs/heads" } },
	{ name: "path_not_found", setup: repo, args: { pattern: "foo", path: "missing" } },
	{ name: "invalid_regex", setup: repo, args: { pattern: "(" } },
];

const manyFiles = [];
for (let i = 0; i < 950; i++) manyFiles.push({ path: `many/${String(i).padStart(4, "0")}_${"n".repeat(50)}.txt`, text: "" });

const findCases = [
	{ name: "by_extension", setup: repo, args: { pattern: "*.py" } },
	{ name: "by_extension_uppercase", setup: repo, args: { pattern: "*.PY" } },
	{ name: "everything", setup: repo, args: { pattern: "*" } },
	{ name: "directory_name", setup: repo, args: { pattern: "nested" } },
	{ name: "path_pattern", setup: repo, args: { pattern: "src/**/*.py" } },
	{ name: "double_star_pattern", setup: repo, args: { pattern: "**/*.txt" } },
	{ name: "single_star_path", setup: repo, args: { pattern: "src/*" } },
	{ name: "in_subdir", setup: repo, args: { pattern: "*.py", path: "src" } },
	{ name: "braces", setup: repo, args: { pattern: "*.{md,log}" } },
	{ name: "question_mark", setup: repo, args: { pattern: "?-?.txt" } },
	{ name: "no_matches", setup: repo, args: { pattern: "*.rs" } },
	{ name: "limit", setup: repo, args: { pattern: "*.py", limit: 2 }, ordered: false },
	{ name: "bytes_limit", setup: manyFiles, args: { pattern: "*.txt" } },
	{ name: "path_not_found", setup: repo, args: { pattern: "*", path: "missing" } },
];

fs.mkdirSync(outDir, { recursive: true });
await capture("bash_cases.json", (cwd, options) => tools.createBashTool(cwd, options), bashCases);
await capture("grep_cases.json", (cwd) => tools.createGrepTool(cwd), grepCases);
await capture("find_cases.json", (cwd) => tools.createFindTool(cwd), findCases);
fs.rmSync(ROOT, { recursive: true, force: true });
console.log(`wrote bash_cases.json, grep_cases.json, find_cases.json to ${outDir}`);
