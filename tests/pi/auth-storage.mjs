// pi 0.73.1's AuthStorage, driven line by line for tests/providers/credentials/test_credentials_pi.py.
//
// Reads one JSON command per stdin line and answers each with one JSON line on stdout:
//   {"op":"open","path":P}                 AuthStorage.create(P) -> {errors}
//   {"op":"get","provider":X}              storage.get(X) -> {credential}
//   {"op":"list"}                          storage.list() -> {providers}
//   {"op":"apiKey","provider":X}           await storage.getApiKey(X) -> {key}
//   {"op":"set","provider":X,"credential":C}  storage.set(X, C) -> {errors}
//   {"op":"fakeOAuth","provider":X}        registers an OAuth provider X whose refreshToken
//                                          records the call and answers access "pi-refreshed"
//   {"op":"refreshes"}                     -> {refreshes}: the refresh tokens it was given
//   {"op":"holdLock","path":P,"next":D}    takes P's lock with pi's FileAuthStorageBackend,
//                                          answers {locked, current}, waits for the next
//                                          line ({"op":"release"}), writes D, releases,
//                                          then answers {released}
import { createInterface } from "node:readline";
import { AuthStorage, FileAuthStorageBackend } from "@mariozechner/pi-coding-agent";
import { registerOAuthProvider } from "@mariozechner/pi-ai/oauth";

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const reply = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);
const next = async () => {
	const { value, done } = await lines.next();
	return done ? undefined : JSON.parse(value);
};
const errors = (storage) => storage.drainErrors().map((e) => String(e));

let storage;
const refreshes = [];

for (;;) {
	const command = await next();
	if (command === undefined) break;
	switch (command.op) {
		case "open":
			storage = AuthStorage.create(command.path);
			reply({ errors: errors(storage) });
			break;
		case "get":
			reply({ credential: storage.get(command.provider) ?? null });
			break;
		case "list":
			reply({ providers: storage.list() });
			break;
		case "apiKey":
			reply({ key: (await storage.getApiKey(command.provider)) ?? null, errors: errors(storage) });
			break;
		case "set":
			storage.set(command.provider, command.credential);
			reply({ errors: errors(storage) });
			break;
		case "fakeOAuth":
			registerOAuthProvider({
				id: command.provider,
				name: command.provider,
				async login() {
					throw new Error("no login in tests");
				},
				async refreshToken(credentials) {
					refreshes.push(credentials.refresh);
					return { access: "pi-refreshed", refresh: "pi-rt", expires: Date.now() + 3600_000 };
				},
				getApiKey: (credentials) => credentials.access,
			});
			reply({ ok: true });
			break;
		case "refreshes":
			reply({ refreshes });
			break;
		case "holdLock": {
			const backend = new FileAuthStorageBackend(command.path);
			await backend.withLockAsync(async (current) => {
				reply({ locked: true, current: current ?? null });
				const release = await next();
				if (release?.op !== "release") throw new Error(`expected release, got ${JSON.stringify(release)}`);
				return { result: undefined, next: JSON.stringify(command.next, null, 2) };
			});
			reply({ released: true });
			break;
		}
		default:
			throw new Error(`unknown op ${command.op}`);
	}
}
