// Records pi 0.73.1's answers to model patterns (parseModelPattern over the whole built-in
// catalogue, and resolveCliModel with and without --provider) for tests/cli/test_model_resolver.py.
// Run from the folder where pi is installed:
//   cd /work/scratch/pi && node /work/main/tests/data/pi/cli/capture_model_patterns.mjs > /work/main/tests/data/pi/cli/model_patterns.json
// pi's packages resolve from the current directory's node_modules, not from this file's folder.
import path from "node:path";
import { pathToFileURL } from "node:url";

const modules = path.join(process.cwd(), "node_modules", "@mariozechner");
const load = (file) => import(pathToFileURL(path.join(modules, file)).href);
const { getModels, getProviders } = await load("pi-ai/dist/index.js");
const { parseModelPattern, resolveCliModel } = await load("pi-coding-agent/dist/core/model-resolver.js");

const all = getProviders().flatMap((p) => getModels(p));
const registry = { getAll: () => all };
const show = (r) => ({
  model: r.model ? `${r.model.provider}/${r.model.id}` : null,
  thinkingLevel: r.thinkingLevel ?? null,
  warning: r.warning ?? null,
  error: r.error ?? null,
});
const patterns = [
  "sonnet", "sonnet:high", "opus", "opus:xhigh", "haiku", "gpt-4o", "gpt-4o:bogus", "gpt-5",
  "gemini-2.5", "gemini-2.5-pro:low", "openai/gpt-4o", "anthropic/claude-sonnet-4-5",
  "claude-sonnet-4-5-20250929", "deepseek", "grok", "kimi", "no-such-model", "mistral-large",
  "openrouter/openai/gpt-4o", "qwen", "llama",
];
const cli = [
  [null, "sonnet"], ["anthropic", "sonnet"], ["anthropic", "claude-sonnet-4-5:high"],
  ["openai", "my-custom-model"], ["openai", "openai/gpt-4o"], ["nope", "x"], [null, "openai/gpt-4o:medium"],
  [null, "openrouter/openai/gpt-4o"], [null, "google/gemini-2.5-flash"], ["groq", "llama"], [null, "zzz"],
];
const out = {
  patterns: patterns.map((p) => ({ pattern: p, ...show(parseModelPattern(p, all)) })),
  cli: cli.map(([provider, model]) => ({
    cliProvider: provider, cliModel: model, ...show(resolveCliModel({ cliProvider: provider ?? undefined, cliModel: model, modelRegistry: registry })),
  })),
};
console.log(JSON.stringify(out, null, 1));
