// Calculators: mounted on [data-calc] elements inside document$.subscribe, so they survive
// Material's instant navigation. One module worker runs Pyodide for the whole page load.
// DOM contract: [data-calc][data-state=prerendered|loading|ready|error], inputs by name,
// results in [data-output], bad input in [role=alert].

const WORKER_URL = new URL("./calc-worker.mjs", import.meta.url);
const started = performance.now();
let worker = null;
let ready = null;
let nextId = 0;
const pending = new Map();

function engine() {
  if (ready) return ready;
  worker = new Worker(WORKER_URL, { type: "module" });
  ready = new Promise((resolve, reject) => {
    worker.addEventListener("message", (event) => {
      const msg = event.data;
      if (msg.type === "ready") resolve();
      else if (msg.type === "fatal") reject(new Error(msg.message));
      else if (pending.has(msg.id)) {
        pending.get(msg.id)(msg);
        pending.delete(msg.id);
      }
    });
    worker.addEventListener("error", (event) => {
      event.preventDefault();
      reject(new Error(event.message || "the calculator worker could not start"));
    });
  });
  return ready;
}

function request(name, inputs) {
  const id = ++nextId;
  return new Promise((resolve) => {
    pending.set(id, resolve);
    worker.postMessage({ id, name, inputs });
  });
}

function controls(root) {
  return [...root.querySelectorAll("form [name]")];
}

function valueOf(control) {
  return control.type === "checkbox" ? (control.checked ? "1" : "0") : control.value;
}

function setValue(control, value) {
  if (control.type === "checkbox") control.checked = ["1", "true", "on"].includes(value);
  else control.value = value;
}

function readValues(root) {
  return Object.fromEntries(controls(root).map((c) => [c.name, valueOf(c)]));
}

function syncEnabled(root) {
  const values = readValues(root);
  for (const control of root.querySelectorAll("[data-enabled-when]")) {
    const [other, wanted] = control.dataset.enabledWhen.split("=");
    control.disabled = values[other] !== wanted;
  }
}

function stateUrl(root) {
  const id = root.dataset.calcId;
  const defaults = JSON.parse(root.dataset.defaults);
  const url = new URL(location.href);
  for (const key of [...url.searchParams.keys()]) {
    if (key.startsWith(`${id}.`)) url.searchParams.delete(key);
  }
  for (const [key, value] of Object.entries(readValues(root))) {
    if (value !== defaults[key]) url.searchParams.set(`${id}.${key}`, value);
  }
  return url;
}

function mount(root) {
  if (root.dataset.mounted) return;
  root.dataset.mounted = "true";
  const name = root.dataset.calc;
  const id = root.dataset.calcId;
  const results = root.querySelector("[data-results]");
  const alert = root.querySelector("[role=alert]");
  const status = root.querySelector("[data-status]");
  const form = root.querySelector("form");
  let latest = 0;
  let timer = 0;

  // A state from the URL (a shared link) replaces the defaults before anything is computed.
  const params = new URLSearchParams(location.search);
  let fromUrl = false;
  for (const control of controls(root)) {
    const value = params.get(`${id}.${control.name}`);
    if (value !== null && value !== valueOf(control)) {
      setValue(control, value);
      fromUrl = true;
    }
  }
  syncEnabled(root);
  if (fromUrl) markStale("Computing the numbers from the link…");

  function markStale(text) {
    results.dataset.stale = "true";
    status.textContent = text;
  }

  async function compute() {
    const token = ++latest;
    const reply = await request(name, readValues(root));
    if (token !== latest) return; // a newer keystroke owns the result
    for (const control of controls(root)) control.removeAttribute("aria-invalid");
    if (reply.ok) {
      results.innerHTML = reply.html;
      results.hidden = false;
      delete results.dataset.stale;
      alert.textContent = "";
      status.textContent = "Live: computed in your browser by the same Python engine.";
    } else {
      const field = root.querySelector(`form [name="${reply.error.field}"]`);
      const label = field ? root.querySelector(`label[for="${field.id}"]`) : null;
      if (field) field.setAttribute("aria-invalid", "true");
      alert.textContent = label ? `${label.textContent}: ${reply.error.message}` : reply.error.message;
      results.hidden = true; // never leave a result on screen that no longer matches the inputs
      status.textContent = "Fix the highlighted input to see results.";
    }
  }

  function changed() {
    syncEnabled(root);
    history.replaceState(history.state, "", stateUrl(root));
    if (root.dataset.state !== "ready") {
      markStale("Your numbers will be computed as soon as the engine has loaded…");
      return;
    }
    markStale("Updating…");
    clearTimeout(timer);
    timer = setTimeout(compute, 60);
  }

  form.addEventListener("input", changed);
  form.addEventListener("change", changed);
  form.addEventListener("submit", (event) => event.preventDefault());
  root.querySelector("[data-copy-link]").addEventListener("click", async () => {
    const url = stateUrl(root);
    url.hash = `calc-${id}`;
    try {
      await navigator.clipboard.writeText(url.href);
      status.textContent = "Link copied.";
    } catch {
      window.prompt("Copy this link:", url.href);
    }
  });

  root.dataset.state = "loading";
  if (!fromUrl) status.textContent = "Pre-rendered at build time; loading the live engine…";
  engine().then(
    async () => {
      root.dataset.state = "ready";
      root.dataset.readyMs = String(Math.round(performance.now() - started));
      await compute();
    },
    (err) => {
      root.dataset.state = "error";
      status.textContent = `The live calculator could not start (${err.message}). The numbers shown are for the build-time defaults.`;
    },
  );
}

document$.subscribe(() => {
  for (const root of document.querySelectorAll("[data-calc]")) mount(root);
});
