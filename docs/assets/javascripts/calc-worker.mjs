// The one Pyodide of a page load, in a module worker. Loads the pinned Pyodide and the engine
// archive from this site (no other host), then answers render requests.
//
// Protocol (page -> worker): {type: "render", id, key, seq, name, inputs}; {type: "exercise", ...} with the same
// fields asks calc.guide.exercises.live(inputs) (exercises.mjs) and is answered like a render; `key` names one mounted
// calculator, `seq` the input change the request answers.
// Protocol (worker -> page):
//   {type: "ready", boot}                             the engine has booted; `boot`: when each step ended, in
//                                                    ms after `boot.workerOrigin` (for bench/boot.py)
//   {type: "fatal", message}                          the engine could not boot; nothing more will come
//   {type: "result", id, key, seq, ok, html|error, renders}  an answer; `renders` counts the renders
//                                                    this worker has run so far
//   {type: "partial", id, key, seq, html}             a first answer while the render goes on (the planner's
//                                                     best layout so far); the "result" for the same id follows
//   {type: "result", id, key, seq, superseded: true}  a newer request of the same calculator came in
//                                                    first, so this one was not computed
//   {type: "dead", id, key, seq, message}             the runtime failed fatally (a Pyodide fatal error,
//                                                    not a CalcError): this worker is useless now
//   {type: "warmed", key, renders, ok}                a calculator's warm-up (below) is over: `renders` repeats
//                                                    (0 where its first answer was an error: nothing to repeat)
//
// Boot: the runtime, the precompiled stdlib and the engine are fetched at once (see below); a missing
// precompiled stdlib falls back to Pyodide's stock one. The precompiled one holds only the modules the worker uses;
// an import that misses them fetches the stock one then (tools/lc_stdlib_fallback.py). The engine is imported from
// its archive (zipimport).
//
// Requests are queued, not computed on arrival: after each render the worker yields to its event
// loop so messages sent meanwhile arrive, and only the newest request per calculator is computed.
// Engine errors (CalcError) come back as data from calc.widgets.render; an unexpected Python
// exception is reported as data too ("internal"); only a broken runtime is "dead".
//
// Warm-up: after a calculator's first answer, once no request has come for WARM_IDLE_MS, the worker renders the same
// inputs again and throws the result away, up to WARM_RENDERS times, each after such a pause (a request that comes
// in waits for one warm render at most). WebAssembly starts in the baseline tier and reaches the optimizing one only
// once code is hot: measured on 2 cores, pipeline-bubble's renders go from 24 ms to about 2 ms over the first few,
// so the reader's first edits get the fast ones. A searching calculator (calc.widgets._partial.SEARCHING) is not
// repeated, and a warm render slower than WARM_SLOWER_THAN_MS ends the warm-up; warm renders post nothing and do not
// count in `renders`.

// Filled in by the build (tools/build_runtime.py): the content-hashed runtime folder under assets/, and the
// pinned lock file's `info` (this worker loads no packages, so the lock file is inlined, empty, not fetched).
const RUNTIME = "__LC_RUNTIME__";
const LOCK_INFO = "__LC_LOCK_INFO__";

const assets = new URL("../", import.meta.url);
const runtimeURL = new URL(RUNTIME, assets);
const compiledStdlib = new URL("python_stdlib.pyc.zip", runtimeURL).href;
const stockStdlib = new URL("python_stdlib.zip", runtimeURL).href;
const realFetch = globalThis.fetch.bind(globalThis);
const ENGINE = "/home/pyodide/calc.zip"; // tools/pyc_compile.py's ENGINE_ROOT: the compiled code names files under it

// Everything the boot needs is requested now, in parallel, before Pyodide's own module has loaded:
// the engine archive and the standard library (precompiled .pyc; the stock sources if that is missing).
const engineArchive = realFetch(new URL("calc/calc.zip", assets), { cache: "no-cache" });
let stdlibIsCut = false; // the precompiled archive holds only the used modules, and the fallback finder
const stdlibResponse = (async () => {
  try {
    const response = await realFetch(compiledStdlib);
    stdlibIsCut = response.ok;
    if (response.ok) return response;
  } catch {
    // unreachable or refused: the stock stdlib below still boots, only slower
  }
  return realFetch(stockStdlib);
})();
const pyodideModule = import(new URL("pyodide.mjs", runtimeURL).href);
for (const pending of [engineArchive, stdlibResponse, pyodideModule]) pending.catch(() => {}); // boot() reports it

// Pyodide only logs a warning when its wasm cannot be fetched or compiled (a corrupt or missing
// pyodide.asm.wasm) and then waits forever; the page would learn of it at its boot watchdog (120 s). Every
// wasm instantiation during the boot is watched instead, and a failed one ends the boot at once.
let wasmFailed;
const wasmFailure = new Promise((_, reject) => {
  wasmFailed = reject;
});
wasmFailure.catch(() => {}); // boot() reports it
const realWasm = { instantiate: WebAssembly.instantiate, instantiateStreaming: WebAssembly.instantiateStreaming };
for (const [name, real] of Object.entries(realWasm)) {
  if (typeof real !== "function") continue;
  WebAssembly[name] = (...args) => {
    const pending = real.apply(WebAssembly, args);
    pending.catch((err) => wasmFailed(new Error(`pyodide.asm.wasm could not be loaded (${String(err && err.message ? err.message : err)})`)));
    return pending;
  };
}

const steps = {}; // step -> ms since this worker's time origin (`workerOrigin` in the ready message)
const mark = (step) => {
  steps[step] = Math.round(performance.now());
};

async function boot() {
  mark("start");
  const { loadPyodide } = await pyodideModule;
  mark("pyodideModule");
  // Pyodide fetches `stdLibURL` itself; hand it the response chosen above instead (one download either way).
  globalThis.fetch = (input, init) => (String(input) === compiledStdlib ? stdlibResponse : realFetch(input, init));
  let pyodide;
  try {
    pyodide = await Promise.race([
      loadPyodide({
        indexURL: runtimeURL.href,
        stdLibURL: compiledStdlib,
        lockFileContents: { info: LOCK_INFO, packages: {} },
      }),
      wasmFailure,
    ]);
  } finally {
    globalThis.fetch = realFetch;
    Object.assign(WebAssembly, realWasm);
  }
  mark("loadPyodide");
  if (stdlibIsCut) {
    // The rest of the stdlib comes on the first import that needs it (tools/lc_stdlib_fallback.py).
    const fallback = pyodide.pyimport("lc_stdlib_fallback");
    fallback.install(stockStdlib, fetchSync);
    fallback.destroy();
  }
  const response = await engineArchive;
  if (!response.ok) throw new Error(`engine archive: HTTP ${response.status}`);
  // The archive goes on sys.path as it is: zipimport reads each module's .pyc (sourceless, see tools/pyc_compile.py)
  // when it is first imported; nothing is unpacked, and a page imports only what it renders.
  pyodide.FS.writeFile(ENGINE, new Uint8Array(await response.arrayBuffer()));
  mark("engineMounted");
  const sys = pyodide.pyimport("sys");
  sys.path.insert(0, ENGINE);
  sys.destroy();
  const widgets = pyodide.pyimport("calc.widgets");
  mark("widgetsImported");
  return { pyodide, widgets };
}

// A synchronous fetch, which a worker may make: the import that missed the cut stdlib waits for the stock archive.
function fetchSync(url) {
  const request = new XMLHttpRequest();
  request.open("GET", url, false);
  request.responseType = "arraybuffer";
  request.send();
  if (request.status !== 200) throw new Error(`${url}: HTTP ${request.status}`);
  return new Uint8Array(request.response);
}

const messageOf = (err) => String(err && err.message ? err.message : err);

let runtime = null; // {pyodide, widgets} once booted
let dead = null; // the fatal message once the runtime has failed
let renders = 0;
const queue = new Map(); // key -> the newest request not yet computed
const WARM_RENDERS = 4;
const WARM_IDLE_MS = 250; // a warm render waits for this long without a request
const WARM_SLOWER_THAN_MS = 100; // a warm render slower than this ends the calculator's warm-up
const warmed = new Set(); // keys whose warm-up is done or under way
const warm = []; // {key, name, inputs, done} still to repeat
let draining = false;

const engine = boot();
engine.then(
  (booted) => {
    runtime = booted;
    self.postMessage({ type: "ready", boot: { workerOrigin: performance.timeOrigin, ...steps } });
    schedule();
  },
  (err) => {
    dead = messageOf(err);
    self.postMessage({ type: "fatal", message: dead });
  },
);

// A macrotask turn: lets message events already queued behind the current one be delivered first.
// A MessageChannel message, not setTimeout(0): nested timers are clamped to 4 ms after a few turns,
// and a reader typing fast keeps this loop turning.
const turn = new MessageChannel();
const turnWaiters = [];
turn.port1.onmessage = () => turnWaiters.shift()?.();
const yieldToMessages = () =>
  new Promise((resolve) => {
    turnWaiters.push(resolve);
    turn.port2.postMessage(null);
  });

function isFatal(err, pyodide) {
  // A Python exception (PythonError) leaves the interpreter usable; anything else thrown by the
  // runtime (an Emscripten abort, "Pyodide already fatally failed", a RangeError from the wasm
  // stack) means the interpreter state cannot be trusted any more.
  const PythonError = pyodide && pyodide.ffi && pyodide.ffi.PythonError;
  if (PythonError && err instanceof PythonError) return false;
  return true;
}

// A calculator that searches (the planner) posts its best answer so far before the full one: one listener, passed to
// every render, posts for the request under way.
let rendering = null;
function postPartial(html) {
  if (!rendering) return; // a warm render posts nothing
  const { id, key, seq } = rendering;
  self.postMessage({ type: "partial", id, key, seq, html: String(html) });
}

/** After `request`'s answer `reply`: repeat it later, when idle, if it is this calculator's first (its time is not
 * a guide: a first render imports the calculator's modules). */
function planWarmUp(request, reply) {
  if (request.type !== "render" || warmed.has(request.key)) return;
  warmed.add(request.key);
  runtime.searching ??= new Set(runtime.pyodide.pyimport("calc.widgets._partial").SEARCHING.toJs());
  if (runtime.searching.has(request.name)) return;
  if (reply.type !== "result") return; // a dead runtime warms nothing
  if (!reply.ok) {
    // Not repeated (an error's time is no guide to a render's), and said so: the page's data-warmed is "0".
    self.postMessage({ type: "warmed", key: request.key, renders: 0, ok: true });
    return;
  }
  warm.push({ key: request.key, name: request.name, inputs: request.inputs, done: 0 });
}

/** `call(args)` on `inputs` made Python; `use(result)` reads the result before it and the arguments are freed. */
function pyCall(call, inputs, use) {
  let args = null;
  let result = null;
  try {
    args = runtime.pyodide.toPy(inputs);
    result = call(args);
    return use(result);
  } finally {
    rendering = null;
    try {
      if (args) args.destroy();
      if (result) result.destroy();
    } catch {
      // a failed runtime may refuse even this; the caller's reply already says so
    }
  }
}

/** One warm render: the result is thrown away; a failure ends the warm-up (a real request would report it). */
function warmOnce() {
  const job = warm[0];
  const started = performance.now();
  let ok = true;
  try {
    pyCall((args) => runtime.widgets.render(job.name, args, postPartial), job.inputs, () => {});
  } catch {
    ok = false;
  }
  job.done += 1;
  // Done, failed (a real request would report it) or slow (not worth repeating): this calculator's warm-up ends.
  if (job.done >= WARM_RENDERS || !ok || performance.now() - started > WARM_SLOWER_THAN_MS) {
    warm.shift();
    self.postMessage({ type: "warmed", key: job.key, renders: job.done, ok });
  }
}

function renderOne(request) {
  const { pyodide, widgets } = runtime;
  const exercise = request.type === "exercise";
  const call = exercise
    ? (args) => (runtime.exercises ??= pyodide.pyimport("calc.guide.exercises")).live(args)
    : (args) => widgets.render(request.name, args, postPartial);
  try {
    if (!exercise) rendering = request;
    const reply = pyCall(call, request.inputs, (result) => result.toJs({ dict_converter: Object.fromEntries }));
    renders += 1;
    return { type: "result", ...reply };
  } catch (err) {
    renders += 1;
    if (isFatal(err, pyodide)) {
      dead = messageOf(err);
      return { type: "dead", message: dead };
    }
    // Never a traceback on the page: the exception's last line ("OverflowError: …") says enough.
    const lines = messageOf(err).split("\n").map((line) => line.trim()).filter(Boolean);
    const last = (lines[lines.length - 1] || "unknown error").slice(0, 200);
    return { type: "result", ok: false, error: { field: "", code: "internal", message: `Internal error: ${last}` } };
  }
}

/** Once the worker has been idle for WARM_IDLE_MS, one warm render, then wait again (a reader who starts typing
 * waits for one warm render at most; one typing on keeps the worker from ever being idle that long). */
let warmTimer = 0;
function idleWarm() {
  clearTimeout(warmTimer);
  if (!warm.length || dead) return;
  warmTimer = setTimeout(() => {
    warmTimer = 0;
    if (draining || queue.size || dead || !warm.length) return;
    warmOnce();
    idleWarm();
  }, WARM_IDLE_MS);
}

function schedule() {
  if (draining || !runtime) return;
  draining = true;
  drain().finally(() => {
    draining = false;
    if (queue.size && !dead) schedule();
  });
}

async function drain() {
  for (;;) {
    await yieldToMessages();
    if (!queue.size) {
      idleWarm();
      return;
    }
    const [key, request] = queue.entries().next().value;
    queue.delete(key);
    if (dead) {
      self.postMessage({ type: "dead", id: request.id, key, seq: request.seq, message: dead });
      continue;
    }
    const reply = renderOne(request);
    self.postMessage({ ...reply, id: request.id, key, seq: request.seq, renders });
    planWarmUp(request, reply);
  }
}

self.addEventListener("message", (event) => {
  const request = event.data;
  if (!request || (request.type !== "render" && request.type !== "exercise")) return;
  const older = queue.get(request.key);
  if (older) self.postMessage({ type: "result", id: older.id, key: older.key, seq: older.seq, superseded: true, renders });
  queue.set(request.key, request);
  if (dead) {
    queue.delete(request.key);
    self.postMessage({ type: "dead", id: request.id, key: request.key, seq: request.seq, message: dead });
    return;
  }
  schedule();
});
