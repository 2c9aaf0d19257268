// Bundles each widget's page code into nb_hitl/static/<name>.js and the
// shared theme into nb_hitl/static/theme.css: the kernel sends them to the
// page once, in one shared page-code model, and each widget's anywidget _esm
// is the small loader (loader.ts -> nb_hitl/static/loader.js) that imports
// them from there (see nb_hitl/widgets/_page_code.py).
import { build } from "esbuild";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const outdir = join(here, "..", "nb_hitl", "static");
mkdirSync(outdir, { recursive: true });
const minify = process.env.NB_HITL_DEV ? false : true;
// output name -> entry point
const widgets = {
  reply: "reply/index.ts",
  permissions: "permissions/index.ts",
  audit: "audit.ts",
  inbox: "inbox.ts",
  loader: "loader.ts",
};
await Promise.all([
  ...Object.entries(widgets).map(([name, entry]) =>
    build({
      entryPoints: [join(here, entry)],
      bundle: true,
      format: "esm",
      minify,
      sourcemap: false,
      target: "es2020",
      outfile: join(outdir, `${name}.js`),
    }),
  ),
  build({
    entryPoints: [join(here, "lib", "theme.css")],
    bundle: true,
    minify,
    target: "chrome100",
    outfile: join(outdir, "theme.css"),
  }),
]);
console.log(`built ${Object.keys(widgets).length} widget bundle(s) and theme.css into ${outdir}`);
