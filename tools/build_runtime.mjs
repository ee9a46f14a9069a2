// Compile the stdlib and the engine to .pyc with the pinned Pyodide itself (node_modules/pyodide), so the
// bytecode carries exactly the magic number the browser's interpreter expects.
//   node tools/build_runtime.mjs OUT_DIR [ENGINE_ROOT] [--all]
// writes OUT_DIR/python_stdlib.pyc.zip and OUT_DIR/calc.zip (the `calc` package under ENGINE_ROOT, default the
// repository) and prints one line of JSON (the summary). The stdlib archive holds the modules the worker uses
// (tools/pyc_used.py), compiled, and tools/lc_stdlib_fallback.py, which fetches the stock archive when an import
// misses them; --all compiles every module instead. Any failure exits non-zero.
import { mkdirSync, realpathSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadPyodide } from "pyodide";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const all = args.includes("--all");
const [outArg, engineArg = root] = args.filter((a) => a !== "--all");
if (!outArg) {
  console.error("usage: build_runtime.mjs OUT_DIR [ENGINE_ROOT] [--all]");
  process.exit(2);
}
mkdirSync(outArg, { recursive: true });
const out = realpathSync(outArg);
const engine = realpathSync(engineArg);
const stock = path.join(root, "node_modules", "pyodide", "python_stdlib.zip");

const py = await loadPyodide({ stdout: (s) => process.stderr.write(s + "\n"), stderr: (s) => process.stderr.write(s + "\n") });
py.FS.mkdirTree("/repo");
py.FS.mount(py.FS.filesystems.NODEFS, { root }, "/repo");
py.FS.mkdirTree("/out");
py.FS.mount(py.FS.filesystems.NODEFS, { root: out }, "/out");
py.FS.mkdirTree("/engine");
py.FS.mount(py.FS.filesystems.NODEFS, { root: engine }, "/engine");
py.runPython("import sys; sys.dont_write_bytecode = True; sys.path.insert(0, '/repo/tools')");
const prefix = py.runPython("import sys; f'/lib/python{sys.version_info[0]}{sys.version_info[1]}.zip/'");
// First what the worker uses (before the compiler's own imports load more of the stdlib), then compile.
const used = all ? undefined : py.pyimport("pyc_used").used_stdlib("/engine", prefix);
const main = py.pyimport("pyc_compile").main;
// The used modules only, plus the finder that fetches the rest of the stock stdlib on a miss (lc_stdlib_fallback).
const fallback = all ? undefined : "/repo/tools/lc_stdlib_fallback.py";
const summary = main(`/repo/${path.relative(root, stock)}`, "/engine", "/out", used, fallback);
process.stdout.write(JSON.stringify(summary.toJs({ dict_converter: Object.fromEntries })) + "\n");
