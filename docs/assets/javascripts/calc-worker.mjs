// The one Pyodide of a page load, in a module worker. Loads the pinned Pyodide and the engine
// archive from this site (no other host), then answers id-tagged render requests. Engine errors
// (CalcError) come back as data from calc.widgets.render; anything unexpected is reported as data too.
import { loadPyodide } from "../pyodide/pyodide.mjs";

const assets = new URL("../", import.meta.url);

async function boot() {
  const pyodide = await loadPyodide({ indexURL: new URL("pyodide/", assets).href });
  const response = await fetch(new URL("calc/calc.zip", assets), { cache: "no-cache" });
  if (!response.ok) throw new Error(`engine archive: HTTP ${response.status}`);
  pyodide.unpackArchive(await response.arrayBuffer(), "zip", { extractDir: "/home/pyodide/engine" });
  const sys = pyodide.pyimport("sys");
  sys.path.insert(0, "/home/pyodide/engine");
  sys.destroy();
  const widgets = pyodide.pyimport("calc.widgets");
  return { pyodide, widgets };
}

const engine = boot();
engine.then(
  () => self.postMessage({ type: "ready" }),
  (err) => self.postMessage({ type: "fatal", message: String(err && err.message ? err.message : err) }),
);

self.addEventListener("message", async (event) => {
  const { id, name, inputs } = event.data;
  let reply;
  try {
    const { pyodide, widgets } = await engine;
    const args = pyodide.toPy(inputs);
    const result = widgets.render(name, args);
    args.destroy();
    reply = result.toJs({ dict_converter: Object.fromEntries });
    result.destroy();
  } catch (err) {
    reply = { ok: false, error: { field: "", code: "internal", message: `Internal error: ${err && err.message ? err.message : err}` } };
  }
  self.postMessage({ id, ...reply });
});
