// Run Python inside the real, pinned Pyodide (node_modules/pyodide) under Node.
//   node tests/pyodide/run.mjs cases ENGINE_ZIP [STDLIB_ZIP] -> prints JSON of tests/pyodide_cases.run_cases()
//        (STDLIB_ZIP: boot with that standard library, e.g. the site's precompiled one, instead of the stock one)
//   node tests/pyodide/run.mjs pytest SITE_PACKAGES [pytest args...] -> runs the engine test suite
// The repository is mounted read-only-in-spirit at /repo; the engine comes from the shipped zip
// (cases, imported from the archive with zipimport, as the browser worker does) or the working tree (pytest).
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadPyodide } from "pyodide";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const [mode, arg, ...rest] = process.argv.slice(2);
const stdLibURL = mode === "cases" && rest[0] ? path.resolve(rest[0]) : undefined;
const py = await loadPyodide({ stdLibURL, stdout: (s) => process.stdout.write(s + "\n"), stderr: (s) => process.stderr.write(s + "\n") });
py.FS.mkdirTree("/repo");
py.FS.mount(py.FS.filesystems.NODEFS, { root }, "/repo");
py.runPython("import sys; sys.dont_write_bytecode = True");

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
} else {
  console.error("usage: run.mjs cases ENGINE_ZIP | pytest SITE_PACKAGES [args]");
  process.exit(2);
}
