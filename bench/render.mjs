// Render times inside the real, pinned Pyodide under Node (the V8 WebAssembly engine Chromium runs).
//   node bench/render.mjs ENGINE_ZIP CASES_JSON RUNS  -> prints "RENDER " + JSON {case: [ms, ...]}
// CASES_JSON: {"calculator": [["label", {field: value, ...}], ...]}. The engine is the site's calc.zip,
// unpacked as the browser worker unpacks it; each case is rendered once untimed (imports, caches), then RUNS
// times, each timed with time.perf_counter() inside Python (no message passing in the figure).
import { readFileSync } from "node:fs";
import { loadPyodide } from "pyodide";

const [zip, casesPath, runs] = process.argv.slice(2);
const py = await loadPyodide();
py.unpackArchive(new Uint8Array(readFileSync(zip)), "zip", { extractDir: "/engine" });
py.globals.set("cases_json", readFileSync(casesPath, "utf8"));
py.globals.set("runs", Number(runs));
const out = py.runPython(`
import json, sys, time
sys.path.insert(0, "/engine")
from calc.widgets import render

times = {}
for name, rows in json.loads(cases_json).items():
    for label, inputs in rows:
        render(name, inputs)
        samples = []
        for _ in range(runs):
            t0 = time.perf_counter()
            reply = render(name, inputs)
            samples.append((time.perf_counter() - t0) * 1000)
        times[f"{name}/{label}"] = {"ms": samples, "ok": bool(reply.get("ok", True))}
json.dumps(times)
`);
process.stdout.write("RENDER " + out + "\n");
