// The live Tether the tests talk to: TETHER_TEST_URL and TETHER_TEST_ADMIN_KEY when the
// caller started one (as `make test` does), else a `tether serve` this script starts on
// a free port with its own data directory (and stops when the tests end).
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const repo = resolve(import.meta.dirname, "../../..");
const tether = join(repo, ".venv", "bin", "tether");

function freePort() {
  return new Promise((done) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

async function waitHealthy(url, child, seconds) {
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    if (child.exitCode !== null) throw new Error(`tether serve exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/health`)).ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`tether serve did not answer within ${seconds}s`);
}

let started = null;

export async function liveTether() {
  if (process.env.TETHER_TEST_URL && process.env.TETHER_TEST_ADMIN_KEY) {
    return { url: process.env.TETHER_TEST_URL, adminKey: process.env.TETHER_TEST_ADMIN_KEY };
  }
  if (started) return started;
  const dataDir = mkdtempSync(join(tmpdir(), "tether-ts-"));
  const port = await freePort();
  const env = { ...process.env, TETHER_DATA_DIR: dataDir, TETHER_PORT: String(port) };
  const child = spawn(tether, ["serve"], { env, stdio: "ignore" });
  child.unref(); // the tests' end, not the server, decides when this process exits
  const url = `http://127.0.0.1:${port}`;
  await waitHealthy(url, child, 120);
  const created = JSON.parse(execFileSync(tether, ["tenant", "create", `ts-${port}`], { env }).toString());
  const stop = () => {
    if (child.exitCode === null) child.kill("SIGTERM"); // it stops its worker and stores
  };
  process.once("exit", stop);
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.once(signal, () => {
      stop();
      process.exit(130);
    });
  }
  started = { url, adminKey: created.admin_token };
  return started;
}
