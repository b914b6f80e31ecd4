#!/usr/bin/env node
/*
 * capture_resources.mjs — record how pi 0.73.1 builds the coding agent's system prompt and loads its
 * resources (context files, skills, prompt templates, SYSTEM.md / APPEND_SYSTEM.md, @file arguments),
 * for pitrio's tests in tests/sessions/resources/.
 *
 * How to run (node >= 20; pi is resolved from node_modules above the current directory):
 *   cd /work/pi && node /work/main/tests/data/pi/resources/capture_resources.mjs /work/main/tests/data/pi/resources
 *
 * What it writes
 *   resources.json   {fixture, scenarios}: the fixture tree (relative path -> content, "{CONFIG}" standing for
 *                    the project config folder, ".pi" here and ".pitrio" in pitrio) and, per scenario, the options,
 *                    the system prompt of a real AgentSession (createAgentSession + DefaultResourceLoader), the
 *                    loaded skills, prompts, context files and diagnostics.
 *   templates.json   substituteArgs / parseCommandArgs / expandPromptTemplate cases.
 *   skills.json      per SKILL.md case: the skill pi loads (or null) and its diagnostics; parseFrontmatter cases;
 *                    /skill:name expansions; formatSkillsForPrompt.
 *   file_args.json   processFileArguments cases (text, empty, image, extension without image bytes).
 *
 * Determinism: the fixture is written under FIXTURE_ROOT and every occurrence of that path in the output is
 * replaced by "<ROOT>"; pi's package dir becomes "<PI_PACKAGE>". `new Date()` without arguments returns a fixed
 * local time (2026-05-04 12:00), so the prompt's "Current date" is 2026-05-04. HOME is set to <ROOT>/home (pi
 * looks for ~/.agents/skills there). This script is our own code; it imports pi's modules and calls them.
 */
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const outDir = path.resolve(process.argv[2] ?? ".");
const FIXTURE_ROOT = "/tmp/pitrio-pi-resources-fixture";
const CONFIG = ".pi";

const RealDate = Date;
const FIXED = new RealDate(2026, 4, 4, 12, 0, 0).getTime();
class FixedDate extends RealDate {
	constructor(...args) {
		if (args.length === 0) super(FIXED);
		else super(...args);
	}
	static now() {
		return FIXED;
	}
}
globalThis.Date = FixedDate;

function findPackageDir(name) {
	let dir = process.cwd();
	while (true) {
		const candidate = path.join(dir, "node_modules", ...name.split("/"));
		if (fs.existsSync(path.join(candidate, "package.json"))) return candidate;
		const parent = path.dirname(dir);
		if (parent === dir) throw new Error(`cannot find ${name} above ${process.cwd()}`);
		dir = parent;
	}
}
const piDir = findPackageDir("@mariozechner/pi-coding-agent");
const piVersion = JSON.parse(fs.readFileSync(path.join(piDir, "package.json"), "utf8")).version;
if (piVersion !== "0.73.1") console.warn(`warning: expected pi-coding-agent 0.73.1, found ${piVersion}`);
const load = (rel) => import(pathToFileURL(path.join(piDir, rel)).href);
const pi = await load("dist/index.js");
const templatesMod = await load("dist/core/prompt-templates.js");
const fileProcessor = await load("dist/cli/file-processor.js");

// ------------------------------------------------------------------------------------------ fixture
const skill = (name, description, body = "Instructions.", extra = "") =>
	`---\nname: ${name}\ndescription: ${description}\n${extra}---\n\n# ${name}\n\n${body}\n`;

const fixture = {
	// The user's home: ~/.agents/skills is a global skill location.
	"home/.agents/skills/home-skill/SKILL.md": skill("home-skill", "A skill from ~/.agents/skills."),
	"home/.agents/skills/loose-home.md": "---\ndescription: root .md files are ignored under .agents\n---\nbody\n",
	// The global agent dir.
	"agent/AGENTS.md": "# Global rules\n\nAlways answer in English.\n",
	"agent/skills/global-skill/SKILL.md": skill("global-skill", "Use for global things & <tags>."),
	"agent/skills/loose.md": "---\ndescription: A root markdown file in the agent skills dir.\n---\n\nLoose skill body.\n",
	"agent/skills/nested/deeper/deep-skill/SKILL.md": skill("deep-skill", "Found by recursion."),
	"agent/skills/hidden-model/SKILL.md": skill(
		"hidden-model",
		"Only via /skill:hidden-model.",
		"Hidden body.",
		"disable-model-invocation: true\n",
	),
	"agent/skills/dup-name/SKILL.md": skill("dup-name", "The global one (loses to the project)."),
	"agent/skills/ignored-by-gitignore/SKILL.md": skill("ignored-by-gitignore", "Never loaded."),
	"agent/skills/.gitignore": "ignored-by-gitignore/\n",
	"agent/skills/node_modules/nm-skill/SKILL.md": skill("nm-skill", "node_modules is skipped."),
	"agent/skills/no-description/SKILL.md": "---\nname: no-description\n---\nNo description here.\n",
	"agent/skills/Bad_Name/SKILL.md": skill("Bad_Name", "Invalid characters and mismatch? no: matches dir."),
	"agent/prompts/greet.md": "---\ndescription: Greet someone\nargument-hint: <name>\n---\nSay hello to $1 ($@).\n",
	"agent/prompts/plain.md": "\n\nFirst line used as the description because there is no frontmatter at all, long enough to be cut\nSecond line $ARGUMENTS\n",
	"agent/prompts/review.md": "---\ndescription: The global review (loses to the project)\n---\nGlobal review.\n",
	"agent/prompts/sub/nested.md": "Not loaded: prompt discovery is not recursive.\n",
	// A parent of the repo with its own context file.
	"work/AGENTS.md": "Parent directory instructions.\n",
	// The repo (a git root: .agents/skills are searched from cwd up to here).
	"work/repo/.git/HEAD": "ref: refs/heads/main\n",
	"work/repo/CLAUDE.md": "Repo CLAUDE.md: use pytest.\n",
	"work/repo/.agents/skills/repo-skill/SKILL.md": skill("repo-skill", "A skill from the repo's .agents/skills."),
	"work/repo/pkg/AGENTS.md": "Package rules: keep functions small.\n",
	"work/repo/pkg/CLAUDE.md": "Not loaded: AGENTS.md wins in the same directory.\n",
	"work/repo/pkg/.agents/skills/pkg-agents-skill/SKILL.md": skill("pkg-agents-skill", "From pkg/.agents/skills."),
	"work/repo/pkg/{CONFIG}/skills/proj-skill/SKILL.md": skill(
		"proj-skill",
		"Project skill.\n  Second line of a plain scalar.",
		"Run scripts/run.sh from here.",
	),
	"work/repo/pkg/{CONFIG}/skills/dup-name/SKILL.md": skill("dup-name", "The project one (wins)."),
	"work/repo/pkg/{CONFIG}/skills/mismatch-dir/SKILL.md": skill("other-name", "Name differs from its folder."),
	"work/repo/pkg/{CONFIG}/prompts/review.md":
		"---\ndescription: Review code\n---\nReview $1 focusing on ${@:2}.\nAll: $ARGUMENTS\n",
	"work/repo/pkg/{CONFIG}/prompts/.hidden.md": "Hidden prompt files are skipped.\n",
	// CLI paths (--skill, --prompt-template).
	"extra/cli-skill/SKILL.md": skill("cli-skill", "Given with --skill."),
	"extra/single.md": "---\nname: single\ndescription: A single markdown file given with --skill.\n---\nSingle.\n",
	"extra/prompts/cli-prompt.md": "---\ndescription: From --prompt-template\n---\nCLI prompt $@\n",
	// A project with a custom SYSTEM.md and APPEND_SYSTEM.md (project wins over global for both).
	"custom/{CONFIG}/SYSTEM.md": "You are a custom assistant.\n",
	"custom/{CONFIG}/APPEND_SYSTEM.md": "Project append.\n",
	// A project that only appends (global SYSTEM.md is absent; the global APPEND_SYSTEM.md is shadowed by none).
	"appendonly/AGENTS.md": "appendonly rules\n",
	"agent/APPEND_SYSTEM.md": "Global append text.\n",
	// Settings entries: skills and prompts arrays.
	"settings-proj/{CONFIG}/settings.json": JSON.stringify({ skills: ["../../claude-skills"], prompts: ["../../more-prompts/extra.md"] }),
	"claude-skills/from-settings/SKILL.md": skill("from-settings", "Listed in project settings."),
	"more-prompts/extra.md": "---\ndescription: From settings\n---\nExtra $1\n",
};
const dirs = ["empty-proj"];

function materialise(root) {
	fs.rmSync(root, { recursive: true, force: true });
	for (const [rel, content] of Object.entries(fixture)) {
		const full = path.join(root, rel.replaceAll("{CONFIG}", CONFIG));
		fs.mkdirSync(path.dirname(full), { recursive: true });
		fs.writeFileSync(full, content);
	}
	for (const rel of dirs) fs.mkdirSync(path.join(root, rel), { recursive: true });
}
materialise(FIXTURE_ROOT);
process.env.HOME = path.join(FIXTURE_ROOT, "home");

function scrub(value) {
	const json = JSON.stringify(value)
		.replaceAll(FIXTURE_ROOT, "<ROOT>")
		.replaceAll(piDir, "<PI_PACKAGE>");
	return JSON.parse(json);
}

// ------------------------------------------------------------------------------------------ scenarios
const ALL_TOOLS = ["read", "bash", "edit", "write", "grep", "find", "ls"];
const scenarioSpecs = [
	{ name: "default", cwd: "work/repo/pkg" },
	{ name: "all_tools", cwd: "work/repo/pkg", tools: ALL_TOOLS },
	{ name: "read_only_tools", cwd: "work/repo/pkg", tools: ["read", "grep", "find", "ls"] },
	{ name: "no_read", cwd: "work/repo/pkg", tools: ["bash", "grep", "find", "ls"] },
	{ name: "bash_only", cwd: "work/repo/pkg", tools: ["bash"] },
	{ name: "no_tools", cwd: "work/repo/pkg", tools: [] },
	{ name: "custom_system", cwd: "custom" },
	{ name: "custom_system_no_read", cwd: "custom", tools: ["bash"] },
	{ name: "append_only", cwd: "appendonly" },
	{
		name: "cli_paths",
		cwd: "work/repo/pkg",
		additionalSkillPaths: ["../../../extra/cli-skill", `${FIXTURE_ROOT}/extra/single.md`, "../../../extra/missing"],
		additionalPromptTemplatePaths: ["../../../extra/prompts"],
	},
	{
		name: "no_discovery",
		cwd: "work/repo/pkg",
		noSkills: true,
		noPromptTemplates: true,
		noContextFiles: true,
		additionalSkillPaths: ["../../../extra/cli-skill"],
	},
	{ name: "settings_entries", cwd: "settings-proj" },
	{ name: "empty", cwd: "empty-proj" },
];

async function runScenario(spec) {
	const cwd = path.join(FIXTURE_ROOT, spec.cwd);
	const agentDir = path.join(FIXTURE_ROOT, "agent");
	const settingsManager = pi.SettingsManager.create(cwd, agentDir);
	const loader = new pi.DefaultResourceLoader({
		cwd,
		agentDir,
		settingsManager,
		additionalSkillPaths: spec.additionalSkillPaths,
		additionalPromptTemplatePaths: spec.additionalPromptTemplatePaths,
		noSkills: spec.noSkills,
		noPromptTemplates: spec.noPromptTemplates,
		noContextFiles: spec.noContextFiles,
		noExtensions: true,
	});
	await loader.reload();
	const { session } = await pi.createAgentSession({
		cwd,
		agentDir,
		resourceLoader: loader,
		settingsManager,
		sessionManager: pi.SessionManager.inMemory(cwd),
		model: (await import(pathToFileURL(findPackageDir("@mariozechner/pi-ai") + "/dist/index.js").href)).getModel(
			"anthropic",
			"claude-sonnet-4-5",
		),
		...(spec.tools ? { tools: spec.tools } : {}),
	});
	const skills = loader.getSkills();
	const prompts = loader.getPrompts();
	const skillExpansions = {};
	for (const text of ["/skill:proj-skill", "/skill:proj-skill  do the thing  ", "/skill:hidden-model x", "/skill:nope y", "/skill:cli-skill"]) {
		skillExpansions[text] = session._expandSkillCommand(text);
	}
	const result = {
		options: spec,
		systemPrompt: session.systemPrompt,
		activeTools: session.getActiveToolNames(),
		skills: skills.skills.map((s) => ({
			name: s.name,
			description: s.description,
			filePath: s.filePath,
			baseDir: s.baseDir,
			disableModelInvocation: s.disableModelInvocation,
		})),
		skillDiagnostics: skills.diagnostics,
		prompts: prompts.prompts.map((p) => ({
			name: p.name,
			description: p.description,
			argumentHint: p.argumentHint ?? null,
			content: p.content,
			filePath: p.filePath,
		})),
		promptDiagnostics: prompts.diagnostics,
		contextFiles: loader.getAgentsFiles().agentsFiles,
		customSystemPrompt: loader.getSystemPrompt() ?? null,
		appendSystemPrompt: loader.getAppendSystemPrompt(),
		skillExpansions,
	};
	session.dispose?.();
	return scrub(result);
}

const scenarios = {};
for (const spec of scenarioSpecs) scenarios[spec.name] = await runScenario(spec);

// ------------------------------------------------------------------------------------------ templates
const argStrings = [
	"",
	"one",
	"one two three",
	'"quoted arg" plain',
	"'single quoted' \"double\"",
	"tab\tseparated  double  space",
	'unclosed "quote here',
	'mid"dle quo"te',
	'"" empty',
	"a b c d e f g h i j k",
	"$1 $@ ${@:2}",
	"ünïcödé 😀",
];
const templateBodies = [
	"$1",
	"$1 and $2 and $3",
	"$@",
	"$ARGUMENTS",
	"${@:2}",
	"${@:2:1}",
	"${@:0}",
	"${@:1:0}",
	"${@:3:10}",
	"$10 $11",
	"$0",
	"$$1",
	"cost: $5.00",
	"$@ then $1",
	"$ARGUMENTSX",
	"${@}",
	"${@:x}",
	"no placeholders",
];
const substitutions = [];
for (const body of templateBodies) {
	for (const argString of argStrings) {
		const args = templatesMod.parseCommandArgs(argString);
		substitutions.push({ template: body, argString, args, result: templatesMod.substituteArgs(body, args) });
	}
}
const expandTemplates = [
	{ name: "greet", content: "Hello $1! All: $@" },
	{ name: "review", content: "Review ${@:2} in $1" },
	{ name: "a-b", content: "dash $ARGUMENTS" },
];
const expansions = [];
for (const text of ["/greet Bob", "/greet", "/greet  two  spaces", "/review file.py a b", "/a-b x", "/unknown x", "greet x", "/greet\tTab", " /greet x", "/"]) {
	expansions.push({ text, result: templatesMod.expandPromptTemplate(text, expandTemplates) });
}
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, "templates.json"), `${JSON.stringify({ templates: expandTemplates, substitutions, expansions }, null, 1)}\n`);

// ------------------------------------------------------------------------------------------ skills
const skillCases = {
	valid: "---\nname: valid\ndescription: A fine skill.\n---\nBody\n",
	"no-name": "---\ndescription: Name from the folder.\n---\nBody\n",
	"mismatch": "---\nname: something-else\ndescription: d\n---\n",
	"Upper-Case": "---\nname: Upper-Case\ndescription: d\n---\n",
	"-leading": "---\nname: -leading\ndescription: d\n---\n",
	"trailing-": "---\nname: trailing-\ndescription: d\n---\n",
	"double--hyphen": "---\nname: double--hyphen\ndescription: d\n---\n",
	"under_score": "---\nname: under_score\ndescription: d\n---\n",
	[`a${"b".repeat(64)}`]: `---\nname: a${"b".repeat(64)}\ndescription: d\n---\n`,
	"long-description": `---\nname: long-description\ndescription: ${"x".repeat(1025)}\n---\n`,
	"exact-description": `---\nname: exact-description\ndescription: ${"x".repeat(1024)}\n---\n`,
	"missing-description": "---\nname: missing-description\n---\nBody\n",
	"blank-description": "---\nname: blank-description\ndescription: '   '\n---\n",
	"no-frontmatter": "# Just markdown\n",
	"unclosed": "---\nname: unclosed\ndescription: never closed\n",
	"crlf": "---\r\nname: crlf\r\ndescription: Windows line endings.\r\n---\r\nBody\r\n",
	"folded": "---\nname: folded\ndescription: >\n  Folded text\n  over lines.\n---\n",
	"literal": "---\nname: literal\ndescription: |\n  Literal\n  lines.\n---\n",
	"quoted": "---\nname: \"quoted\"\ndescription: 'It''s quoted: yes'\n---\n",
	"disable-true": "---\nname: disable-true\ndescription: d\ndisable-model-invocation: true\n---\n",
	"disable-string": "---\nname: disable-string\ndescription: d\ndisable-model-invocation: \"true\"\n---\n",
	"disable-yes": "---\nname: disable-yes\ndescription: d\ndisable-model-invocation: yes\n---\n",
	"multi-errors": "---\nname: Multi--Errors-\ndescription: d\n---\n",
	"extra-fields": "---\nname: extra-fields\ndescription: d\nlicense: MIT\nmetadata:\n  a: 1\nallowed-tools: read bash\n---\n",
	"yes-description": "---\nname: yes-description\ndescription: yes\n---\n",
	"number-description": "---\nname: number-description\ndescription: 12\n---\n",
	"empty-name": "---\nname: ''\ndescription: Empty name falls back to the folder.\n---\n",
	"comment-frontmatter": "---\n# only a comment\nname: comment-frontmatter\ndescription: d # trailing comment\n---\n",
};
const skillCaseRoot = path.join(FIXTURE_ROOT, "skill-cases");
const skillResults = {};
for (const [folder, content] of Object.entries(skillCases)) {
	const dir = path.join(skillCaseRoot, folder);
	fs.mkdirSync(dir, { recursive: true });
	fs.writeFileSync(path.join(dir, "SKILL.md"), content);
	const result = pi.loadSkillsFromDir({ dir, source: "path" });
	skillResults[folder] = {
		content,
		skills: result.skills.map((s) => ({
			name: s.name,
			description: s.description,
			filePath: s.filePath,
			baseDir: s.baseDir,
			disableModelInvocation: s.disableModelInvocation,
		})),
		diagnostics: result.diagnostics,
	};
}
const frontmatterCases = [
	"---\na: 1\n---\nbody",
	"---\na: yes\nb: no\nc: on\nd: off\ne: ~\nf: null\ng: 2024-01-02\nh: 0x10\ni: 010\nj: 1e3\nk: .5\nl: True\nm: TRUE\n---\nbody",
	"---\n---\nbody",
	"---\n\n---\n  body with spaces  \n\n",
	"no frontmatter\n---\nx",
	"---\nkey: value\n----\nrest",
	"--- \na: 1\n---\nb",
	"---a: 1\n---\nb",
	"\n---\na: 1\n---\nb",
	"---\nlist:\n  - x\n  - y\n---\n",
	"---\na: 1\n---",
	"---\na: '---'\n---\nb\n---\nc",
];
const frontmatter = frontmatterCases.map((input) => ({ input, ...pi.parseFrontmatter(input) }));
const formatCases = [
	[],
	[{ name: "a", description: "x < y & z > 'q' \"r\"", filePath: "/p/a/SKILL.md", disableModelInvocation: false }],
	[{ name: "hidden", description: "h", filePath: "/p/h/SKILL.md", disableModelInvocation: true }],
];
const formatted = formatCases.map((skills) => ({ skills, result: pi.formatSkillsForPrompt(skills) }));
fs.writeFileSync(
	path.join(outDir, "skills.json"),
	`${JSON.stringify(scrub({ cases: skillResults, frontmatter, format: formatted }), null, 1)}\n`,
);

// ------------------------------------------------------------------------------------------ @file arguments
const fileRoot = path.join(FIXTURE_ROOT, "file-args");
fs.mkdirSync(fileRoot, { recursive: true });
// A 2x1 PNG (red, blue), made by hand.
const png = Buffer.from(
	"89504e470d0a1a0a0000000d49484452000000020000000108020000007b40e8dd0000000d49444154789c63f8cf0004ff01070001ffe2239e590000000049454e44ae426082",
	"hex",
);
fs.writeFileSync(path.join(fileRoot, "pic.png"), png);
fs.writeFileSync(path.join(fileRoot, "notes.txt"), "line one\nline two\n");
fs.writeFileSync(path.join(fileRoot, "empty.txt"), "");
fs.writeFileSync(path.join(fileRoot, "fake.png"), "not really a png\n");
fs.writeFileSync(path.join(fileRoot, "ünï.md"), "# title\n");
const savedCwd = process.cwd();
process.chdir(fileRoot);
const fileCases = [["notes.txt"], ["@notes.txt"], ["empty.txt", "notes.txt"], ["pic.png"], ["fake.png"], ["ünï.md", "pic.png", "notes.txt"], [path.join(fileRoot, "notes.txt")]];
const fileResults = [];
for (const args of fileCases) {
	for (const autoResizeImages of [true, false]) {
		const result = await fileProcessor.processFileArguments(args, { autoResizeImages });
		fileResults.push({ args, autoResizeImages, ...result });
	}
}
process.chdir(savedCwd);
fs.writeFileSync(path.join(outDir, "file_args.json"), `${JSON.stringify(scrub({ cases: fileResults, pngHex: png.toString("hex") }), null, 1)}\n`);

fs.writeFileSync(
	path.join(outDir, "resources.json"),
	`${JSON.stringify({ piVersion, config: CONFIG, fixture, dirs, scenarios }, null, 1)}\n`,
);
fs.rmSync(FIXTURE_ROOT, { recursive: true, force: true });
console.log(`wrote ${outDir}`);
