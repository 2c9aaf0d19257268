// The page's unit tests: node has no TypeScript, so each test/*.test.ts is
// bundled by esbuild (as build.mjs bundles the widgets) into js/.test-build/
// (ignored by git) and run by node's own test runner. Tests that
// need a DOM get jsdom's (test/dom.ts). Arguments are passed to `node --test`
// (e.g. --test-name-pattern=C35).
import { build } from "esbuild";
import { readdirSync, rmSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
// beside js/node_modules, so `import "jsdom"` resolves from there; one per checkout
const outdir = join(here, "..", ".test-build");
rmSync(outdir, { recursive: true, force: true });
const tests = readdirSync(here).filter((f) => f.endsWith(".test.ts")).sort();
await build({
  entryPoints: tests.map((f) => join(here, f)),
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  packages: "external",
  sourcemap: "inline",
  outdir,
  outExtension: { ".js": ".mjs" },
  logLevel: "warning",
});
const files = tests.map((f) => join(outdir, f.replace(/\.ts$/, ".mjs")));
const run = spawnSync(process.execPath, ["--enable-source-maps", "--test", "--test-reporter=spec", ...process.argv.slice(2), ...files], { stdio: "inherit" });
process.exit(run.status ?? 1);
