// RpcClient starts its agent as `node <cliPath> --mode rpc ...`: this cliPath runs pitrio
// instead, the executable named by PITRIO_BIN, with the same arguments and stdio. Signals are
// passed on (RpcClient.stop() sends SIGTERM) and pitrio's exit status becomes the shim's.
import { spawn } from "node:child_process";

const bin = process.env.PITRIO_BIN;
if (!bin) {
	process.stderr.write("pitrio-shim: PITRIO_BIN is not set (the path of the pitrio executable)\n");
	process.exit(2);
}
const child = spawn(bin, process.argv.slice(2), { stdio: "inherit" });
for (const signal of ["SIGTERM", "SIGHUP", "SIGINT"]) {
	process.on(signal, () => child.kill(signal));
}
child.on("error", (error) => {
	process.stderr.write(`pitrio-shim: cannot run ${bin}: ${error.message}\n`);
	process.exit(2);
});
child.on("exit", (code, signal) => {
	process.exit(code ?? 128 + (signal === "SIGKILL" ? 9 : 15));
});
