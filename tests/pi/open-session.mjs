// pi 0.73.1 opens a session file pitrio wrote: `node open-session.mjs FILE` prints, as JSON,
// the entry types pi read, the roles of the messages its buildSessionContext() gives the agent,
// and what its convertToLlm() would send to a model.
import { SessionManager, convertToLlm } from "@mariozechner/pi-coding-agent";

const manager = SessionManager.open(process.argv[2]);
const context = manager.buildSessionContext();
const llm = convertToLlm(context.messages).map((m) => ({
	role: m.role,
	text: typeof m.content === "string" ? m.content : m.content.map((b) => b.text ?? "").join(""),
}));
console.log(
	JSON.stringify({
		entryTypes: manager.getEntries().map((e) => e.type),
		roles: context.messages.map((m) => m.role),
		llm,
	}),
);
