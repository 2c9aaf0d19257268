// Bundles every top-level js/*.ts entry (one per widget) into
// nb_hitl/static/<name>.js, the file anywidget loads as the widget's _esm.
import { build } from "esbuild";
import { readdirSync, mkdirSync } from "node:fs";
import { dirname, join, basename } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const outdir = join(here, "..", "nb_hitl", "static");
mkdirSync(outdir, { recursive: true });
const entries = readdirSync(here).filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"));
await Promise.all(
  entries.map((f) =>
    build({
      entryPoints: [join(here, f)],
      bundle: true,
      format: "esm",
      minify: process.env.NB_HITL_DEV ? false : true,
      sourcemap: false,
      target: "es2020",
      loader: { ".css": "text" },
      outfile: join(outdir, basename(f, ".ts") + ".js"),
    }),
  ),
);
console.log(`built ${entries.length} widget bundle(s) into ${outdir}`);
