// Run Python inside the real, pinned Pyodide (node_modules/pyodide) under Node.
//   node tests/pyodide/run.mjs cases ENGINE_ZIP [STDLIB_ZIP] -> prints JSON of tests/pyodide_cases.run_cases()
//        (STDLIB_ZIP: boot with that standard library, e.g. the site's precompiled one, instead of the stock one)
//   node tests/pyodide/run.mjs pytest SITE_PACKAGES [pytest args...] -> runs the engine test suite
//   node tests/pyodide/run.mjs python STDLIB_ZIP CODE -> boots with that stdlib, then prints RESULT + the value of CODE
// A cut stdlib (tools/lc_stdlib_fallback.py inside) gets its fallback installed as the worker installs it, with a
// synchronous fetch that reads node_modules/pyodide/python_stdlib.zip and counts its calls (FETCHES in the output).
// The repository is mounted read-only-in-spirit at /repo; the engine comes from the shipped zip
// (cases, imported from the archive with zipimport, as the browser worker does) or the working tree (pytest).
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadPyodide } from "pyodide";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const [mode, arg, ...rest] = process.argv.slice(2);
const stdlibArg = mode === "cases" ? rest[0] : mode === "python" ? arg : undefined;
const stdLibURL = stdlibArg ? path.resolve(stdlibArg) : undefined;
const py = await loadPyodide({ stdLibURL, stdout: (s) => process.stdout.write(s + "\n"), stderr: (s) => process.stderr.write(s + "\n") });
py.FS.mkdirTree("/repo");
py.FS.mount(py.FS.filesystems.NODEFS, { root }, "/repo");
py.runPython("import sys; sys.dont_write_bytecode = True");
let fetches = 0;
if (stdLibURL && py.runPython("import importlib.util; importlib.util.find_spec('lc_stdlib_fallback') is not None")) {
  const stock = path.join(root, "node_modules", "pyodide", "python_stdlib.zip");
  const fetchSync = () => {
    fetches += 1;
    return new Uint8Array(readFileSync(stock));
  };
  py.pyimport("lc_stdlib_fallback").install("python_stdlib.zip", fetchSync);
}
process.on("exit", () => process.stdout.write(`FETCHES ${fetches}\n`));

if (mode === "cases") {
  // As the browser worker does: the archive itself on sys.path (zipimport), nothing unpacked.
  py.FS.writeFile("/home/pyodide/calc.zip", new Uint8Array(readFileSync(arg)));
  py.runPython("import sys; sys.path[:0] = ['/home/pyodide/calc.zip', '/repo/tests']");
  const out = py.runPython("import json, pyodide_cases; json.dumps(pyodide_cases.run_cases(), sort_keys=True)");
  process.stdout.write("CASES " + out + "\n");
} else if (mode === "pytest") {
  py.FS.mkdirTree("/site-packages");
  py.FS.mount(py.FS.filesystems.NODEFS, { root: arg }, "/site-packages");
  py.runPython("import os, sys; sys.path[:0] = ['/repo']; sys.path.append('/site-packages'); os.chdir('/repo')");
  py.globals.set("pytest_args", py.toPy(rest));
  const code = py.runPython("import pytest; pytest.main(list(pytest_args))");
  process.exit(Number(code));
} else if (mode === "python") {
  process.stdout.write("RESULT " + py.runPython(rest[0]) + "\n");
} else {
  console.error("usage: run.mjs cases ENGINE_ZIP [STDLIB_ZIP] | pytest SITE_PACKAGES [args] | python STDLIB_ZIP CODE");
  process.exit(2);
}
