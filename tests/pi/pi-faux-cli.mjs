// pi 0.73.1's own CLI with a faux provider, for comparing pitrio with pi under RpcClient:
// `node pi-faux-cli.mjs --mode rpc --provider faux ...` runs pi's main() with an inline
// extension that registers provider "faux" (model "faux-1") from pi-ai's registerFauxProvider.
// Its responses come from the JSON file PITRIO_FAUX_SCRIPT names, in pitrio's faux-script
// format (pitrio/cli/_faux_cli.py): a list of strings or {content, stopReason, errorMessage}.
import fs from "node:fs";
import { fauxAssistantMessage, fauxText, fauxThinking, fauxToolCall, registerFauxProvider } from "@mariozechner/pi-ai";
import { main } from "@mariozechner/pi-coding-agent";

function block(raw) {
	if (raw.type === "text") return fauxText(raw.text);
	if (raw.type === "thinking") return fauxThinking(raw.thinking);
	if (raw.type === "toolCall") return fauxToolCall(raw.name, raw.arguments ?? {}, { id: raw.id });
	throw new Error(`pi-faux-cli: unknown block ${JSON.stringify(raw)}`);
}

function response(raw) {
	if (typeof raw === "string") return fauxAssistantMessage(raw);
	const content = typeof raw.content === "string" ? raw.content : (raw.content ?? []).map(block);
	const hasCall = Array.isArray(content) && content.some((b) => b.type === "toolCall");
	return fauxAssistantMessage(content, {
		stopReason: raw.stopReason ?? (hasCall ? "toolUse" : "stop"),
		errorMessage: raw.errorMessage,
	});
}

const faux = registerFauxProvider({ api: "faux", provider: "faux", tokenSize: { min: 1, max: 1 } });
const scriptPath = process.env.PITRIO_FAUX_SCRIPT;
if (scriptPath) {
	const data = JSON.parse(fs.readFileSync(scriptPath, "utf8"));
	faux.setResponses((Array.isArray(data) ? data : data.responses).map(response));
}
const model = faux.getModel();

function fauxExtension(pi) {
	pi.registerProvider("faux", {
		baseUrl: model.baseUrl,
		apiKey: "faux",
		api: "faux",
		models: [
			{
				id: model.id,
				name: model.name,
				reasoning: model.reasoning,
				input: model.input,
				cost: model.cost,
				contextWindow: model.contextWindow,
				maxTokens: model.maxTokens,
			},
		],
	});
}

await main(process.argv.slice(2), { extensionFactories: [fauxExtension] });
