// Calculators: mounted on [data-calc] elements inside document$.subscribe, so they survive
// Material's instant navigation. One module worker runs Pyodide; if it dies, a fresh one is
// started for later calculations.
//
// DOM contract: [data-calc][data-state=prerendered|loading|ready|error], inputs by name,
// results in [data-output] inside [data-results] (data-stale while they do not answer the current
// inputs), bad input in [role=alert], the status line in [data-status], [data-copy-link],
// data-ready-ms (ms from script start to the engine being ready).
//
// Signals on the calculator root (tests wait on these, never on time):
//   data-seq       the number of the current inputs: 0 for the values at mount (defaults or the
//                  link's), incremented synchronously on every input/change event.
//   data-answered  the data-seq whose live result or input error is shown; absent until the first
//                  live answer. Settled means data-state="ready" and data-answered == data-seq.
//   data-worker-renders  how many renders the current worker had run when it answered (superseded
//                  requests are not rendered, so this counts real computations).
//   data-first     the data-seq whose first answer is shown: a searching calculator's best so far (the
//                  planner's, in a [data-partial-answer] block on top of the results, marked data-partial,
//                  until the full answer), else its full answer.
//   data-warmed    set once the worker's warm-up of this calculator is over (calc-worker.mjs): how many warm
//                  renders ran ("0" where its first answer was an error), or "failed". Its edits run optimized
//                  WebAssembly from then on. A searching calculator is not warmed up and never gets it.
// A reply for older inputs is never shown and never clears data-stale.

const WORKER_URL = new URL("./calc-worker.mjs", import.meta.url);
// Links in results to a site page, <a data-site-href="accuracy/#not-modelled">, are addressed from the site
// root: the build gives the pre-render its page-relative href; after a live render, href is set here from
// where this file is served (<site>/assets/javascripts/calc.mjs, as site-base.js finds the site). So is the
// text of a site file's absolute address, <span data-site-address="assets/….whl">: the copy blocks' first
// line, the "pip install" of the engine's wheel (issue 19; the build writes the pre-render's, site-base.js
// rebases it).
const SITE_ROOT = new URL("../../", import.meta.url);
function siteLinks(container) {
  for (const a of container.querySelectorAll("a[data-site-href]")) {
    a.setAttribute("href", new URL(a.dataset.siteHref, SITE_ROOT).href);
  }
  for (const span of container.querySelectorAll("[data-site-address]")) {
    const address = new URL(span.dataset.siteAddress, SITE_ROOT).href;
    if (span.textContent !== address) span.textContent = address;
  }
}
const started = performance.now();

// Boot timeout: Pyodide is ~10 MB of wasm and stdlib; on a slow link (1 Mbit/s) or a loaded
// 2-core machine a boot can take more than a minute, but one that has not finished in two
// minutes has stalled (a hung request, a wasm compile that never ends): say so instead of
// spinning forever. A render normally takes milliseconds; one that has not answered in 30 s means
// the runtime is wedged. Tests shorten both through `window.__lcCalcTest` (unset in normal use).
// `inPlace: false` replaces the results' HTML wholesale instead of patching it (for measuring the two).
// `staleAfterMs`: an edit's previous result is marked stale (dimmed, "Updating…") only if the new answer is not back
// by then; an answer within a frame or two replaces it with no flicker and no second paint (0: at once).
// `addressIdleMs`, `addressLatestMs`: with the engine live, an edit's inputs reach the address bar once its answer is
// shown and no newer edit has come for `addressIdleMs`, and at the latest `addressLatestMs` after the edit, so a reader
// typing on gets one write a second at most. A write is off the answer's path but not free: `history.replaceState`
// cost Chromium about 9 ms of this thread and 14 ms of the browser process per edit (traced, 2 cores), which the
// next keystroke's render shared the cores with. A link clicked, or the page left, writes a pending address first.
const DEFAULTS = {
  bootTimeoutMs: 120_000,
  renderTimeoutMs: 30_000,
  maxRestarts: 3,
  inPlace: true,
  staleAfterMs: 100,
  addressIdleMs: 100,
  addressLatestMs: 1000,
};
const settings = () => ({ ...DEFAULTS, ...(globalThis.__lcCalcTest || {}) });

/** Call `flush` before the reader leaves the page's state behind: a click on a link (capture phase, so before
 *  Material's instant navigation pushes the next page's entry), or the page hidden or left. Returns the function that
 *  removes the listeners again. */
function onLeaving(flush) {
  const onClick = (event) => {
    if (event.target instanceof Element && event.target.closest("a[href]")) flush();
  };
  const onHidden = () => {
    if (document.visibilityState === "hidden") flush();
  };
  document.addEventListener("click", onClick, true);
  window.addEventListener("pagehide", flush);
  document.addEventListener("visibilitychange", onHidden);
  return () => {
    document.removeEventListener("click", onClick, true);
    window.removeEventListener("pagehide", flush);
    document.removeEventListener("visibilitychange", onHidden);
  };
}

const QUOTE_CHARS = 40;
const INVISIBLE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/g;
const LINE_BREAKS = /[\t\n\r]/;

/** A short, inert quotation of something the reader (or a link) supplied. */
function quote(text) {
  const s = String(text);
  const head = s.length > QUOTE_CHARS ? `${s.slice(0, QUOTE_CHARS)}…` : s;
  return head.replace(INVISIBLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).replace(/[\t\n\r]/g, " ");
}

/** Keep engine messages to a sane size however they quote the input. */
function clip(message) {
  const s = String(message).replace(INVISIBLE, "");
  return s.length > 300 ? `${s.slice(0, 300)}…` : s;
}

// ---------------------------------------------------------------------------------------------
// The engine: one worker at a time.

let current = null; // {worker, ready, booted, pending}
let bootFailure = null; // an Error once a boot failed: not retried in this page load
let deaths = 0;
let nextId = 0;
const controllers = new Set();

/**
 * The worker a page with calculators started from its <head> (overrides/main.html), long before this
 * module runs, with the events it sent meanwhile; taken once, by the first boot of this page load.
 */
function earlyWorker() {
  const early = globalThis.__lcEarlyWorker;
  globalThis.__lcEarlyWorker = null;
  if (!early) return null;
  early.worker.onmessage = null; // from here on, calc.mjs's own listeners hear it
  early.worker.onerror = null;
  if (early.url === WORKER_URL.href) return early;
  early.worker.terminate();
  return null;
}

/** The booted engine (starting it on first use); exported for exercises.mjs, which shares this one worker. */
export function engine() {
  if (bootFailure) return Promise.reject(bootFailure);
  if (current) return current.ready;
  const { bootTimeoutMs } = settings();
  const early = earlyWorker();
  const worker = early ? early.worker : new Worker(WORKER_URL, { type: "module" });
  const eng = { worker, booted: false, pending: new Map() };
  current = eng;
  eng.ready = new Promise((resolve, reject) => {
    const bootFailed = (message) => {
      if (eng.booted || eng.over) return;
      eng.over = true;
      clearTimeout(timer);
      worker.terminate();
      if (current === eng) current = null;
      bootFailure = new Error(message);
      reject(bootFailure);
    };
    const timer = setTimeout(
      () => bootFailed(`the engine did not load within ${Math.round(bootTimeoutMs / 1000)} s`),
      bootTimeoutMs,
    );
    eng.bootFailed = bootFailed;
    const onMessage = (event) => {
      const msg = event.data || {};
      if (msg.type === "ready") {
        if (eng.over) return;
        clearTimeout(timer);
        eng.booted = true;
        resolve(eng);
      } else if (msg.type === "fatal") {
        bootFailed(msg.message || "the engine could not load");
      } else if (msg.type === "dead") {
        die(eng, msg.message || "the Python runtime failed");
      } else if (msg.type === "warmed") {
        // The worker's warm-up of one calculator is over (calc-worker.mjs): its renders now run optimized code. The
        // signal the bench waits on before it times an edit, and what a test of the warm-up reads.
        for (const controller of controllers) if (controller.key === msg.key) controller.warmed(msg);
      } else if (msg.type === "partial") {
        eng.pending.get(msg.id)?.partial?.(msg); // the full "result" for the same id follows
      } else if (msg.type === "result") {
        const waiting = eng.pending.get(msg.id);
        if (!waiting) return;
        eng.pending.delete(msg.id);
        clearTimeout(waiting.timer);
        waiting.resolve(msg);
      }
    };
    const onError = (event) => {
      event.preventDefault();
      const message = event.message || "the calculator worker failed";
      if (eng.booted) die(eng, message);
      else bootFailed(message);
    };
    worker.addEventListener("message", onMessage);
    worker.addEventListener("error", onError);
    for (const event of early ? early.events : []) (event.type === "error" ? onError : onMessage)(event);
  });
  return eng.ready;
}

/** The runtime of `eng` is gone: stop it, answer its pending requests, tell every calculator. */
function die(eng, message) {
  if (eng.over) return;
  eng.over = true;
  deaths += 1;
  eng.worker.terminate();
  if (current === eng) current = null;
  for (const waiting of eng.pending.values()) {
    clearTimeout(waiting.timer);
    waiting.resolve({ type: "dead", message });
  }
  eng.pending.clear();
  const permanent = deaths >= settings().maxRestarts;
  for (const controller of [...controllers]) controller.engineDied(message, permanent);
}

/** One request to the worker; `type` "exercise" asks calc.guide.exercises.live instead of a calculator (exercises.mjs).
 * `onPartial` receives a searching calculator's first answer ({seq, html}) before the promise resolves. */
export function request(key, seq, name, inputs, type = "render", onPartial = null) {
  const eng = current;
  if (!eng || !eng.booted || eng.over) return Promise.resolve({ type: "dead", message: "the engine is not running" });
  const id = ++nextId;
  const { renderTimeoutMs } = settings();
  return new Promise((resolve) => {
    const timer = setTimeout(
      () => die(eng, `a calculation did not finish within ${Math.round(renderTimeoutMs / 1000)} s`),
      renderTimeoutMs,
    );
    eng.pending.set(id, { resolve, timer, partial: onPartial });
    eng.worker.postMessage({ type, id, key, seq, name, inputs });
  });
}

// ---------------------------------------------------------------------------------------------
// Results in place: a live answer usually differs from the shown one only in a few numbers, so the new
// fragment is parsed once and only the text and attributes that differ are written; a node whose kind
// or tag differs (or a list of children of another length) is replaced. Less DOM churn than innerHTML,
// less style and layout work, and a screen reader's live region hears only what changed.

const scratch = document.createElement("template");
// A chart's live state is charts.mjs's (its signals on [data-chart]); a patch changes only its spec and label.
const CHART_OWN = new Set([
  "data-chart-state",
  "data-chart-rendered",
  "data-chart-renders",
  "data-chart-scheme",
  "data-chart-error",
  "data-chart-failed",
]);

function morph(into, from) {
  const have = [...into.childNodes];
  const want = [...from.childNodes];
  if (have.length !== want.length) {
    into.replaceChildren(...want);
    return;
  }
  for (let i = 0; i < have.length; i++) {
    const x = have[i];
    const y = want[i];
    if (x.nodeType !== y.nodeType || x.nodeName !== y.nodeName || x.namespaceURI !== y.namespaceURI) {
      into.replaceChild(y, x);
    } else if (x.nodeType === Node.TEXT_NODE || x.nodeType === Node.COMMENT_NODE) {
      if (x.data !== y.data) x.data = y.data;
    } else if (x.nodeType !== Node.ELEMENT_NODE) {
      into.replaceChild(y, x);
    } else {
      const chart = x.hasAttribute("data-chart");
      for (const attr of [...x.attributes]) {
        if (attr.localName === "open" && x.nodeName === "DETAILS") continue; // what the reader unfolded stays open
        if (chart && CHART_OWN.has(attr.localName)) continue;
        if (!y.hasAttributeNS(attr.namespaceURI, attr.localName)) x.removeAttributeNS(attr.namespaceURI, attr.localName);
      }
      for (const attr of y.attributes) {
        if (chart && CHART_OWN.has(attr.localName)) continue;
        if (x.getAttributeNS(attr.namespaceURI, attr.localName) !== attr.value) {
          x.setAttributeNS(attr.namespaceURI, attr.name, attr.value);
        }
      }
      // A chart's drawing is charts.mjs's: the build's or live SVG stays until charts.mjs draws the new spec
      // (an unchanged chart is not touched at all; a changed one is updated in its Vega view).
      if (!x.classList.contains("lc-chart__view")) morph(x, y);
    }
  }
}

/** Make `target`'s content equal to `html`, touching only what differs. */
function patch(target, html) {
  scratch.innerHTML = html;
  morph(target, scratch.content);
  scratch.innerHTML = "";
}

// ---------------------------------------------------------------------------------------------
// Form helpers.

function controls(root) {
  return [...root.querySelectorAll("form [name]")];
}

// A pasted config.json wins over the preset (calc.widgets._model), so while one is pasted the Model select reads
// "From config.json" (an option added here, value FROM_CONFIG); the value sent and linked is still the preset
// it replaced (data-lc-preset), which the engine ignores while the config is there.
const FROM_CONFIG = "lc-from-config";

function valueOf(control) {
  if (control.type === "checkbox") return control.checked ? "1" : "0";
  if (control.tagName === "SELECT" && control.value === FROM_CONFIG) return control.dataset.lcPreset || "";
  return control.value;
}

function setValue(control, value) {
  if (control.type === "checkbox") control.checked = ["1", "true", "on"].includes(value);
  else if (control.tagName === "SELECT" && control.value === FROM_CONFIG) control.dataset.lcPreset = value;
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

/** A select's current option for an old name a link still carries (calc.widgets.Field.aliases), else `value`. */
function currentOption(control, value) {
  const aliases = control.dataset.aliases ? JSON.parse(control.dataset.aliases) : {};
  return Object.hasOwn(aliases, value) ? aliases[value] : value;
}

/** Why a value from a link cannot be put into a control, or "" if it can (the engine judges the rest). */
function unusable(control, value, limit = control.tagName === "TEXTAREA" ? 8000 : 200) {
  if (control.tagName === "SELECT") {
    return [...control.options].some((o) => o.value === value && o.value !== FROM_CONFIG) ? "" : "it is not one of the choices";
  }
  if (control.type === "checkbox") {
    return ["1", "0", "true", "false", "on", "off"].includes(value) ? "" : "it must be 1 or 0";
  }
  if (value.length > limit) return `it is longer than ${limit} characters`;
  INVISIBLE.lastIndex = 0;
  if (INVISIBLE.test(value) || (control.tagName !== "TEXTAREA" && LINE_BREAKS.test(value))) {
    INVISIBLE.lastIndex = 0;
    return "it contains invisible or direction-changing characters";
  }
  return "";
}

// ---------------------------------------------------------------------------------------------
// A pasted config.json in a link: a textarea's text travels packed, "~" then the base64url of its
// deflate-raw bytes (the browser's CompressionStream: a preset's config.json, 460-1,700 characters, packs
// to 0.35-0.8 of its length, a quarter to a half of the same text percent-encoded), so that a link carries
// the whole model. A link longer than LINK_LIMIT is not offered for sharing: the copy
// button says why instead (chat apps, mail clients and some servers cut longer addresses, silently).
// Unpacking stops at the engine's own limit on a config (calc.models.hf_config.MAX_CONFIG_CHARS).

const PACKED = "~";
const LINK_LIMIT = 8000;
const UNPACKED_CHARS = 256 * 1024;
const canPack = typeof CompressionStream === "function" && typeof DecompressionStream === "function";

function base64url(bytes) {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

async function pack(text) {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream("deflate-raw"));
  return PACKED + base64url(new Uint8Array(await new Response(stream).arrayBuffer()));
}

/** The text of a packed value; rejects with the reason it cannot be read (shown to the reader). */
async function unpack(value) {
  const code = value.slice(PACKED.length);
  if (!canPack) throw new Error("this browser cannot unpack it (no DecompressionStream)");
  if (!/^[A-Za-z0-9_-]*$/.test(code) || code.length % 4 === 1) throw new Error("it is not a packed config (bad base64url)");
  const binary = atob(code.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (code.length % 4)) % 4));
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  const reader = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw")).getReader();
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let text = "";
  try {
    for (;;) {
      const { done, value: chunk } = await reader.read();
      if (done) break;
      text += decoder.decode(chunk, { stream: true });
      if (text.length > UNPACKED_CHARS) {
        reader.cancel().catch(() => {});
        throw new Error(`it unpacks to more than ${UNPACKED_CHARS.toLocaleString("en")} characters`);
      }
    }
    return text + decoder.decode();
  } catch (err) {
    if (err instanceof Error && err.message.startsWith("it unpacks")) throw err;
    throw new Error("it is not a packed config (the data is damaged)");
  }
}

/** The input a link parameter sets: its own, or for `model` (before preset/config existed) one of those. */
function linkField(field, value, byName) {
  if (byName.has(field) || field !== "model" || !byName.has("preset")) return field;
  const text = String(value).trim();
  return text.startsWith("{") || text.startsWith(PACKED) ? "config" : "preset";
}

/** Unfold the "More options" <details> a control sits in (a link set it, or the engine found it invalid). */
function unfold(control) {
  const more = control.closest("details");
  if (more && !more.open) more.open = true;
}

// ---------------------------------------------------------------------------------------------
// One unit switch for the whole site (GB or GiB), in the header, remembered across pages in localStorage.
// Calculators follow it through their `unit` field (a link's `ID.unit` still wins for that calculator, and
// changing a calculator's own unit moves the switch); prose numbers that are byte counts carry both texts,
// formatted by the engine at build time (data-si, data-binary: hooks/numbers_registry.py), and show the
// chosen one. Until the reader picks a unit the switch reads GB, the calculators' default, and prose byte counts
// show GB too (so the serving prose's KV cache sizes read like its calculator's); nothing is stored until then.

const UNIT_KEY = "lc-unit";
const UNIT_CHOICES = { GB: "GB (10⁹ bytes)", GiB: "GiB (2³⁰ bytes)" };

let linkUnit = null; // the unit a link on this page set (?ID.unit=GiB): the whole page shows it, nothing is stored

/** The unit the page shows: a link's, else the reader's choice, else null (the calculators' default, GB). */
function pageUnit() {
  return linkUnit || storedUnit();
}

function storedUnit() {
  try {
    const unit = localStorage.getItem(UNIT_KEY);
    return Object.hasOwn(UNIT_CHOICES, unit || "") ? unit : null;
  } catch {
    return null; // storage refused (a privacy setting): the switch works for this page only
  }
}

function showProseUnits(unit) {
  for (const span of document.querySelectorAll(".lc-num[data-bytes]")) {
    if (span.dataset.native === undefined) span.dataset.native = span.textContent;
    const nativeBinary = /iB$/.test(span.dataset.native);
    const text = (unit === "GiB") === nativeBinary ? span.dataset.native : span.dataset[unit === "GiB" ? "binary" : "si"];
    if (text && span.textContent !== text) span.textContent = text;
  }
}

function chooseUnit(unit, origin, remember = true) {
  if (!Object.hasOwn(UNIT_CHOICES, unit)) return;
  if (remember) {
    linkUnit = null;
    try {
      localStorage.setItem(UNIT_KEY, unit);
    } catch {
      // not remembered; this page still follows
    }
  } else {
    linkUnit = unit;
  }
  document.documentElement.dataset.lcUnit = unit;
  for (const select of document.querySelectorAll("[data-unit-switch]")) if (select.value !== unit) select.value = unit;
  showProseUnits(unit);
  for (const controller of [...controllers]) if (controller !== origin) controller.followUnit(unit);
}

/** The header's switch: added once (Material keeps the header across instant navigation). */
function unitSwitch() {
  const unit = storedUnit();
  let select = document.querySelector("[data-unit-switch]");
  if (!select) {
    const header = document.querySelector(".md-header__inner");
    if (!header) return;
    const label = document.createElement("label");
    label.className = "lc-units";
    label.title = "Units for memory sizes, on every page";
    const name = document.createElement("span");
    name.textContent = "Units";
    select = document.createElement("select");
    select.setAttribute("data-unit-switch", "");
    select.setAttribute("aria-label", "Units for memory sizes"); // its visible "Units" is hidden on phones
    for (const [value, text] of Object.entries(UNIT_CHOICES)) select.append(new Option(text.split(" ")[0], value));
    select.value = unit || "GB";
    select.addEventListener("change", () => chooseUnit(select.value, null));
    label.append(name, select);
    const before = header.querySelector("[data-md-component=palette], .md-search");
    if (before) before.before(label);
    else header.append(label);
  }
  select.value = pageUnit() || "GB";
  document.documentElement.dataset.lcUnit = select.value;
  showProseUnits(select.value);
}

/** A pasted config.json in a few words until the engine answers: type · layers · attention · vocabulary, worded
 *  as the engine's line (calc.widgets._model.model_chip), which replaces it with the parameter count added. */
function configSummary(text) {
  let config;
  try {
    config = JSON.parse(text);
  } catch {
    return "not JSON yet";
  }
  if (!config || typeof config !== "object" || Array.isArray(config)) return "not a JSON object";
  const t = config.text_config && typeof config.text_config === "object" ? { ...config, ...config.text_config } : config;
  const count = (v) => (Number.isSafeInteger(v) && v > 0 ? v.toLocaleString("en") : "");
  const parts = [];
  if (typeof t.model_type === "string") parts.push(quote(t.model_type));
  if (count(t.num_hidden_layers)) parts.push(`${count(t.num_hidden_layers)} layers`);
  const heads = count(t.num_attention_heads);
  const kv = count(t.num_key_value_heads);
  if (heads && kv && t.num_key_value_heads < t.num_attention_heads)
    parts.push(`${t.num_key_value_heads === 1 ? "MQA" : "GQA"}, ${heads} heads / ${kv} KV`);
  else if (heads) parts.push(`${heads} heads`);
  if (count(t.vocab_size)) parts.push(`vocabulary ${count(t.vocab_size)}`);
  return parts.join(" · ") || "no model keys found";
}

/**
 * One source of truth for the model: while a config.json is pasted, the Model select reads "From config.json"
 * with a chip that sums the config up and a button that clears it; choosing a preset clears the config.
 * Returns `sync()`, to call before the inputs are read; its `answered(results)`, called with a live answer, makes
 * the chip read the engine's line (`data-output=model_chip`: type · parameters · layers · attention · vocabulary)
 * for as long as the config it answered is the one pasted.
 */
function configChoice(byName) {
  const select = byName.get("preset");
  const area = byName.get("config");
  if (!select || !area || select.tagName !== "SELECT" || area.tagName !== "TEXTAREA") {
    return Object.assign(() => {}, { answered() {} });
  }
  const option = new Option("From config.json", FROM_CONFIG);
  const chip = document.createElement("div");
  chip.className = "lc-config-chip";
  chip.setAttribute("data-config-chip", "");
  chip.hidden = true;
  const text = document.createElement("span");
  const clear = document.createElement("button");
  clear.type = "button";
  clear.className = "lc-config-chip__clear";
  clear.textContent = "Clear";
  clear.setAttribute("aria-label", "Clear the pasted config.json and use the preset");
  chip.append(text, clear);
  select.after(chip);
  const chosePreset = () => {
    if (select.value !== FROM_CONFIG && area.value.trim() !== "") area.value = ""; // before the form hears it
  };
  select.addEventListener("input", chosePreset);
  select.addEventListener("change", chosePreset);
  clear.addEventListener("click", () => {
    area.value = "";
    area.dispatchEvent(new Event("input", { bubbles: true }));
    select.focus();
  });
  let engine = { config: "", text: "" }; // the engine's line and the config it read
  function sync() {
    const pasted = area.value.trim() !== "";
    if (pasted && select.value !== FROM_CONFIG) {
      select.dataset.lcPreset = select.value;
      if (!option.parentNode) select.prepend(option);
      select.value = FROM_CONFIG;
    } else if (!pasted && select.value === FROM_CONFIG) {
      select.value = select.dataset.lcPreset || "";
    }
    if (!pasted && option.parentNode) option.remove();
    chip.hidden = !pasted;
    const read = engine.text && engine.config === area.value.trim() ? engine.text : "";
    const summary = pasted ? read || `From config.json: ${configSummary(area.value)}` : "";
    if (text.textContent !== summary) text.textContent = summary;
  }
  sync.answered = (results) => {
    const line = results.querySelector("[data-output=model_chip]");
    engine = { config: area.value.trim(), text: line ? line.textContent.trim() : "" };
    sync();
  };
  return sync;
}

// ---------------------------------------------------------------------------------------------
// The answer's first line. While the inputs differ from the pre-rendered ones and no live answer has come (a
// shared link, a unit restated, an edit before the engine is up), the build's results answer other inputs: they
// are hidden and the answer's top reads "Computing 70B · ZeRO-3 · dp 64…". On phones a sticky one-line copy of
// the verdict sits at the bottom of the screen while the form is in view, and jumps to the answer.

const SUMMARY_PARTS = 5;

/** An engine message in the form's words: one that opens with the field's internal name ("params must be a
 *  positive count", "gpus admit no layout") opens with the label the form shows instead ("Parameters must be…").
 *  A message that states the value ("tp = 16 is more than…") is left as it is: it quotes what was typed. */
function readerWords(message, name, label) {
  if (!name || !label || !message.startsWith(`${name} `) || message.startsWith(`${name} =`)) return message;
  return label + message.slice(name.length);
}

/** The label text of a control, or its name. */
function labelOf(root, control) {
  const label = control.id ? root.querySelector(`label[for="${CSS.escape(control.id)}"]`) : null;
  return label ? label.textContent.trim() : control.name;
}

/** The inputs that differ from `defaults`, in a few words: "70B · ZeRO-3 · dp 64". */
function inputSummary(root, defaults) {
  const parts = [];
  for (const control of controls(root)) {
    const value = valueOf(control);
    if (control.disabled || !Object.hasOwn(defaults, control.name) || value === defaults[control.name]) continue;
    const name = control.name;
    let text;
    if (control.tagName === "TEXTAREA") text = "your config.json";
    else if (name === "zero_stage" && /^[0-3]$/.test(value)) text = `ZeRO-${value}`;
    else if (name === "unit") text = `in ${value}`;
    else if (control.type === "checkbox") text = `${labelOf(root, control)} ${value === "1" ? "on" : "off"}`;
    else if (control.tagName === "SELECT") {
      const option = [...control.options].find((o) => o.value === value);
      text = (option ? option.textContent : value).replace(/\s*\(.*$/, "");
    } else if (name === "params") text = quote(value);
    else text = `${name.length <= 4 ? name : labelOf(root, control).toLowerCase()} ${quote(value)}`;
    parts.push(text.length > 32 ? `${text.slice(0, 32)}…` : text);
  }
  if (parts.length > SUMMARY_PARTS) parts.splice(SUMMARY_PARTS, parts.length, "…");
  return parts.join(" · ");
}

/** The pending line at the top of the answer and the sticky verdict; `update()` after every change shown. */
function answerLine(root, form, results, alert, status) {
  const answer = results.closest(".lc-calc__answer") || results.parentElement;
  const pending = document.createElement("p");
  pending.className = "lc-calc__pending";
  pending.setAttribute("data-pending", "");
  pending.hidden = true;
  answer.prepend(pending);
  const jump = document.createElement("button");
  jump.type = "button";
  jump.className = "lc-calc__jump";
  jump.setAttribute("data-jump", "");
  jump.hidden = true;
  form.after(jump);
  jump.addEventListener("click", () => answer.scrollIntoView({ block: "start" }));
  if (typeof IntersectionObserver === "function") {
    new IntersectionObserver((entries) => {
      for (const entry of entries) root.toggleAttribute("data-answer-in-view", entry.isIntersecting);
    }).observe(answer);
  }
  const line = {
    pending,
    pend(text) {
      if (pending.textContent !== text) pending.textContent = text;
      pending.hidden = !text;
      line.update();
    },
    update() {
      let text = "";
      let ok = "";
      if (!pending.hidden) text = pending.textContent;
      else if (results.hidden) text = alert.textContent || status.textContent;
      else if (results.dataset.stale) text = status.textContent;
      else {
        const verdict = results.querySelector("[data-output=verdict], .lc-verdict") || results.querySelector(".lc-kv");
        // The verdict's numbers first when the engine gives them (data-short: "Best: 6.86 s, MFU 54.0%", "Fits: 17.5
        // GB of 85.5 GB"): a phone cuts the whole line before its numbers.
        const brief = verdict && verdict.dataset.short;
        text = brief || (verdict ? verdict.textContent.replace(/\s+/g, " ").trim() : "");
        ok = (verdict && verdict.dataset.ok) || "";
      }
      const label = text ? `${text} ↓` : "";
      if (jump.textContent !== label) jump.textContent = label;
      if (ok) jump.dataset.ok = ok;
      else delete jump.dataset.ok;
      jump.hidden = !text;
    },
  };
  return line;
}

// ---------------------------------------------------------------------------------------------
// One calculator.

let mounts = 0;

const LIVE = "Live: computed in your browser by the same Python engine.";

function mount(root) {
  if (root.dataset.mounted) return;
  root.dataset.mounted = "true";
  const name = root.dataset.calc;
  const id = root.dataset.calcId;
  const key = `${id}#${++mounts}`;
  const path = location.pathname; // only this page's URL ever holds this calculator's state
  const defaults = JSON.parse(root.dataset.defaults);
  const results = root.querySelector("[data-results]");
  const alert = root.querySelector("[role=alert]");
  const status = root.querySelector("[data-status]");
  const form = root.querySelector("form");
  const copyButton = root.querySelector("[data-copy-link]");
  const prerendered = results.innerHTML;
  if (!alert.id) alert.id = `${root.id || `calc-${id}`}-alert`;
  results.setAttribute("aria-live", "polite");

  let seq = 0; // the current inputs' number
  let answered = -1; // the inputs' number whose live answer is shown
  let answerOk = false;
  let edited = false; // the reader changed something since mount
  let fromUrl = false;
  let failure = null; // {lead, permanent} while live calculation is unavailable
  let invalid = null; // the control marked aria-invalid
  let lastGood = false; // the results hold a live answer (for earlier inputs once an error came)

  const owned = () => root.isConnected && location.pathname === path;
  const setState = (state) => {
    root.dataset.state = state;
  };
  const setStatus = (text) => {
    if (status.textContent !== text) status.textContent = text;
    line.update();
  };
  const setAlert = (text) => {
    if (alert.textContent !== text) alert.textContent = text;
  };
  const markStale = (text) => {
    results.dataset.stale = "true";
    setStatus(text);
  };
  let staleTimer = 0;
  /** Mark the shown result stale unless the answer to the newest inputs is back within `staleAfterMs`. */
  const markStaleSoon = (text) => {
    const after = settings().staleAfterMs;
    if (!after) {
      markStale(text);
      return;
    }
    if (staleTimer) return; // the pending check looks at the newest inputs when it fires
    staleTimer = setTimeout(() => {
      staleTimer = 0;
      if (root.isConnected && answered !== seq && root.dataset.state === "ready") markStale(text);
    }, after);
  };
  root.dataset.seq = String(seq);
  root.dataset.address = String(seq); // the address holds the inputs the page opened with
  const line = answerLine(root, form, results, alert, status);
  let lastValues = null; // the inputs last acted on (a blur's change event after an input event changes nothing)

  // Notices about the link (unknown, repeated or unusable parameters): created here, text only.
  const notice = document.createElement("div");
  notice.className = "lc-calc__notice";
  notice.setAttribute("data-link-notice", "");
  notice.setAttribute("role", "status");
  notice.hidden = true;
  alert.before(notice);
  const copyNote = document.createElement("span");
  copyNote.className = "lc-calc__copied";
  copyNote.setAttribute("data-copy-note", "");
  copyNote.setAttribute("role", "status");
  copyButton.after(copyNote);
  // Over the last good result while the inputs cannot be computed: what the dimmed numbers under it are.
  const staleNote = document.createElement("p");
  staleNote.className = "lc-calc__stale-note";
  staleNote.setAttribute("data-stale-note", "");
  staleNote.hidden = true;
  results.before(staleNote);

  // Upload: a file input under each textarea (a config.json) fills it as if pasted; read here, sent nowhere.
  for (const area of form.querySelectorAll("textarea[name]")) {
    const pick = document.createElement("input");
    pick.type = "file";
    pick.accept = ".json,application/json";
    pick.id = `${area.id}-upload`;
    pick.setAttribute("data-upload", area.name);
    const label = document.createElement("label");
    label.htmlFor = pick.id;
    label.textContent = "Or upload a config.json file";
    const note = document.createElement("small");
    note.setAttribute("data-upload-note", "");
    note.setAttribute("role", "status");
    const wrap = document.createElement("div");
    wrap.className = "lc-field__upload";
    wrap.append(label, pick, note);
    area.after(wrap);
    const quiet = (event) => event.stopPropagation(); // the textarea's own input event reports the change
    pick.addEventListener("input", quiet);
    pick.addEventListener("change", async (event) => {
      quiet(event);
      const file = pick.files && pick.files[0];
      if (!file || !owned()) return;
      if (file.size > UNPACKED_CHARS) {
        note.textContent = `Not read: ${quote(file.name)} is ${file.size.toLocaleString("en")} bytes, more than the ${UNPACKED_CHARS.toLocaleString("en")} a config.json may be.`;
        return;
      }
      try {
        area.value = await file.text();
      } catch (err) {
        note.textContent = `Not read: ${quote(file.name)} (${clip(err.message)}).`;
        return;
      }
      note.textContent = `Read ${quote(file.name)}.`;
      area.dispatchEvent(new Event("input", { bubbles: true }));
    });
  }

  const noteId = (control) => `${control.id || `${root.id}-${control.name}`}-error`;

  function clearInvalid() {
    if (!invalid) return;
    const id = noteId(invalid);
    document.getElementById(id)?.remove();
    invalid.removeAttribute("aria-invalid");
    invalid.removeAttribute("aria-errormessage");
    const rest = (invalid.getAttribute("aria-describedby") || "").split(/\s+/).filter((t) => t && t !== id);
    if (rest.length) invalid.setAttribute("aria-describedby", rest.join(" "));
    else invalid.removeAttribute("aria-describedby");
    invalid = null;
  }

  /** Mark the field the engine blamed, with its message under it (the card's alert announces it once). */
  function markInvalid(control, text) {
    if (invalid !== control) clearInvalid();
    invalid = control;
    unfold(control);
    const id = noteId(control);
    let note = document.getElementById(id);
    if (!note) {
      note = document.createElement("p");
      note.id = id;
      note.className = "lc-field__error";
      note.setAttribute("data-field-error", "");
      (control.closest(".lc-field") || control).append(note);
    }
    if (note.textContent !== text) note.textContent = text;
    control.setAttribute("aria-invalid", "true");
    control.setAttribute("aria-errormessage", id);
    const tokens = (control.getAttribute("aria-describedby") || "").split(/\s+/).filter(Boolean);
    if (!tokens.includes(id)) control.setAttribute("aria-describedby", [...tokens, id].join(" "));
  }

  /** The results are current again, or gone: no "last good result" note, nothing hidden from assistive tech. */
  function unmarkLastGood() {
    staleNote.hidden = true;
    results.removeAttribute("aria-hidden");
    results.inert = false;
  }

  // A state from the URL (a shared link) replaces the defaults before anything is computed.
  const byName = new Map(controls(root).map((c) => [c.name, c]));
  const syncConfig = configChoice(byName);
  const chosen = new Set(); // the fields the reader or the link set: an option's data-sets leaves them alone

  /** A select with data-sets (calc.widgets.Field.sets) sets the fields its option names, the training stack its
   *  defaults, except those the reader or the link chose; runs before the change is read, so one request carries
   *  them. A link's own stack sets nothing: the values it leaves out are the defaults it was made with. */
  function applySets(event) {
    const control = event.target;
    if (!control || !byName.has(control.name) || byName.get(control.name) !== control) return;
    chosen.add(control.name);
    if (!control.dataset.sets) return;
    let sets;
    try {
      sets = JSON.parse(control.dataset.sets)[valueOf(control)];
    } catch {
      return;
    }
    for (const [field, value] of Object.entries(sets || {})) {
      const other = byName.get(field);
      if (!other || chosen.has(field) || unusable(other, value) || valueOf(other) === value) continue;
      setValue(other, value);
    }
  }
  const params = new URLSearchParams(location.search);
  const problems = [];
  const seen = new Set();
  const fromLink = (param, control, given, limit) => {
    const value = currentOption(control, given);
    const why = unusable(control, value, limit);
    if (why) problems.push(`Ignored the link parameter “${quote(param)}” (“${quote(value)}”): ${why}; the default stands.`);
    else if (value !== valueOf(control)) {
      setValue(control, value);
      unfold(control);
      fromUrl = true;
      chosen.add(control.name);
    }
  };
  const unpacking = []; // packed textarea values (a config.json) being inflated before the first computation
  for (const param of params.keys()) {
    if (!param.startsWith(`${id}.`) || seen.has(param)) continue;
    seen.add(param);
    const values = params.getAll(param);
    const control = byName.get(linkField(param.slice(id.length + 1), values[0], byName));
    if (!control) {
      problems.push(`Ignored the link parameter “${quote(param)}”: this calculator has no such input.`);
    } else if (values.length > 1) {
      problems.push(`Ignored the link parameter “${quote(param)}”: it is given ${values.length} times; the default stands.`);
    } else if (control.tagName === "TEXTAREA" && values[0].startsWith(PACKED)) {
      unpacking.push(
        unpack(values[0]).then(
          (text) => edited || fromLink(param, control, text, UNPACKED_CHARS),
          (err) => problems.push(`Ignored the link parameter “${quote(param)}”: ${err.message}; the default stands.`),
        ),
      );
    } else {
      fromLink(param, control, values[0]);
    }
  }
  const showProblems = () => {
    if (!problems.length) return;
    for (const text of problems) {
      const p = document.createElement("p");
      p.textContent = text;
      notice.append(p);
    }
    notice.hidden = false;
  };
  const unitControl = byName.get("unit");
  const linkedUnit = params.get(`${id}.unit`);
  if (unitControl && linkedUnit && !unusable(unitControl, linkedUnit) && linkedUnit !== pageUnit()) {
    // A link's unit is the page's: the header switch and every calculator show it (not stored).
    chooseUnit(linkedUnit, null, false);
  }
  const preferred = pageUnit();
  let restated = false; // the site's unit switch, not the link or the defaults, chose this calculator's unit
  if (preferred && unitControl && !params.has(`${id}.unit`) && valueOf(unitControl) !== preferred && !unusable(unitControl, preferred)) {
    setValue(unitControl, preferred);
    restated = true;
  }
  syncEnabled(root);

  const sameAsDefaults = (except = []) => {
    const values = readValues(root);
    return Object.keys(values).every((k) => except.includes(k) || !Object.hasOwn(defaults, k) || values[k] === defaults[k]);
  };

  const packs = new Map(); // a textarea's text -> its packed form
  const packable = (field, value) => canPack && value !== "" && byName.get(field)?.tagName === "TEXTAREA";

  /** The URL of the current inputs, or null while a textarea's text is not packed yet (then use linkUrl).
   *  The address bar (`withUnit` false) leaves out the unit, which is the site's switch's (one unit switch
   *  drives the site: it never writes ?ID.unit= into the address); a copied link keeps it. */
  function stateUrl(withUnit = false) {
    const url = new URL(location.href);
    for (const param of [...url.searchParams.keys()]) {
      if (param.startsWith(`${id}.`)) url.searchParams.delete(param);
    }
    for (const [field, value] of Object.entries(readValues(root))) {
      if (value === defaults[field] || (field === "unit" && !withUnit)) continue;
      if (packable(field, value) && !packs.has(value)) return null;
      url.searchParams.set(`${id}.${field}`, packable(field, value) ? packs.get(value) : value);
    }
    return url;
  }

  /** The URL of the current inputs, every textarea's text packed first. */
  async function linkUrl() {
    for (const [field, value] of Object.entries(readValues(root))) {
      if (value === defaults[field] || !packable(field, value) || packs.has(value)) continue;
      const packed = await pack(value);
      if (packs.size >= 4) packs.clear();
      packs.set(value, packed);
    }
    return stateUrl(true) || linkUrl();
  }

  /** Put the current inputs in the address bar (after packing, for a pasted config; newest inputs only);
   *  `data-address` then names the inputs' number it holds (tests wait for it to equal `data-seq`). */
  function syncUrl() {
    addressDue = false;
    const mine = seq;
    const url = stateUrl();
    if (url) {
      history.replaceState(history.state, "", url);
      root.dataset.address = String(mine);
      return;
    }
    linkUrl().then(
      () => {
        const packed = stateUrl();
        if (!packed || mine !== seq || !owned()) return;
        history.replaceState(history.state, "", packed);
        root.dataset.address = String(mine);
      },
      () => {},
    );
  }

  /** The address follows an edit off the answer's path: once its answer is shown and `addressIdleMs` pass with no
   *  newer edit (`addressAfterAnswer`), at the latest `addressLatestMs` after the first edit it has not written, and
   *  before the reader follows a link or leaves the page. */
  let addressDue = false;
  let addressIdle = 0; // the timer of the pause after the last answer
  let addressLatest = 0; // the timer of the latest write
  let stopLeaving = null; // removes the listeners that write a pending address before the reader leaves
  const syncUrlIfDue = () => {
    clearTimeout(addressIdle);
    clearTimeout(addressLatest);
    stopLeaving?.();
    stopLeaving = null;
    if (addressDue && owned()) syncUrl();
  };
  function syncUrlLater() {
    clearTimeout(addressIdle); // a newer edit is being computed: no write under it
    if (addressDue) return;
    addressDue = true;
    addressLatest = setTimeout(syncUrlIfDue, settings().addressLatestMs);
    stopLeaving = onLeaving(syncUrlIfDue);
  }
  function addressAfterAnswer() {
    if (!addressDue) return;
    clearTimeout(addressIdle);
    addressIdle = setTimeout(syncUrlIfDue, settings().addressIdleMs);
  }

  /** Before the first live answer: the build's results answer the defaults, so for other inputs they are hidden
   *  and the answer's top says what is being computed instead (never a verdict for other inputs). */
  function holdForFirstAnswer() {
    if (answered !== -1 || failure) return;
    // Only the unit differs (the site's switch restated it): the same numbers in other units, shown dimmed.
    if (sameAsDefaults(["unit"])) {
      line.pend("");
      results.hidden = false;
      return;
    }
    results.hidden = true;
    line.pend(`Computing ${inputSummary(root, defaults)}…`);
  }

  /** Live calculation is unavailable: say so and say exactly what the numbers on screen are. */
  function explainUnavailable() {
    const { lead, permanent } = failure;
    const tail = permanent ? "" : " Your next edit restarts it.";
    if (answered === seq && answerOk) {
      setStatus(`${lead} The numbers shown match your inputs.${tail}`);
      return;
    }
    if (answered !== seq) {
      clearInvalid();
      setAlert("");
    }
    if (results.innerHTML !== prerendered) results.innerHTML = prerendered;
    lastGood = false;
    unmarkLastGood();
    results.hidden = false;
    line.pend("");
    let what;
    if (sameAsDefaults()) {
      delete results.dataset.stale;
      what = "The numbers shown are for the build-time defaults.";
    } else {
      results.dataset.stale = "true";
      what = fromUrl && !edited
        ? "The numbers shown are the build-time defaults, not the ones in the link."
        : "The numbers shown are the build-time defaults, not your inputs.";
    }
    setStatus(`${lead} ${what}${tail}`);
  }

  function fail(lead, permanent) {
    failure = { lead, permanent };
    setState("error");
    explainUnavailable();
  }

  /** Write each [data-fill=FIELD] result's text into that field's box (a preset's parameter count into
   *  will-it-fit's Parameters: the engine's number, never the one typed before the preset replaced it). The box
   *  the reader is typing in is left alone; the filled value is what the inputs already are, so it posts nothing. */
  function fillFields() {
    let filled = false;
    for (const source of results.querySelectorAll("[data-fill]")) {
      const control = byName.get(source.dataset.fill);
      const text = source.textContent.trim();
      if (!control || control.tagName === "SELECT" || control.type === "checkbox" || !text) continue;
      if (control === document.activeElement || control.value === text) continue;
      control.value = text;
      filled = true;
    }
    if (!filled) return;
    lastValues = JSON.stringify(readValues(root));
    syncUrlLater(); // the address holds what the form shows (written after this answer is painted)
  }

  /** A searching calculator's best answer so far for the current inputs, in a block on top of the results until
   * the full answer comes; the previous results stay below it, dimmed (charts and tables keep their place). */
  function showPartial(reply) {
    let first = results.querySelector(":scope > [data-partial-answer]");
    if (!first) {
      first = document.createElement("div");
      first.dataset.partialAnswer = "";
      results.prepend(first);
    }
    first.innerHTML = reply.html;
    siteLinks(first);
    results.dataset.partial = "true";
    root.dataset.first = String(reply.seq);
    setStatus("Searching: the best layout found so far is on top; the full ranking follows.");
  }

  function show(reply) {
    if (reply.renders !== undefined) root.dataset.workerRenders = String(reply.renders);
    answered = reply.seq;
    answerOk = Boolean(reply.ok);
    line.pend("");
    results.querySelector(":scope > [data-partial-answer]")?.remove();
    delete results.dataset.partial;
    root.dataset.first = String(answered);
    root.dataset.answered = String(answered);
    if (reply.ok) {
      clearInvalid();
      if (settings().inPlace) patch(results, reply.html);
      else results.innerHTML = reply.html;
      siteLinks(results);
      fillFields();
      syncConfig.answered(results); // the select's chip reads the engine's line, parameters included
      lastGood = true;
      unmarkLastGood();
      results.hidden = false;
      setAlert("");
      delete results.dataset.stale;
      setStatus(LIVE);
      root.dispatchEvent(new CustomEvent("lc-calc:results", { bubbles: true })); // live results are in the DOM
      return;
    }
    const error = reply.error || {};
    const control = error.field ? byName.get(error.field) : undefined;
    const label = control ? labelOf(root, control) : "";
    const message = clip(readerWords(error.message || "the engine could not compute these numbers", error.field, label));
    if (control) markInvalid(control, message);
    else clearInvalid();
    setAlert(control && !message.startsWith(label) ? `${label}: ${message}` : message);
    // Never a result that looks current for other inputs: the last live one stays, dimmed, under a note that says
    // what it is, out of the accessibility tree and inert; with none yet (the build's numbers), nothing is shown.
    results.dataset.stale = "true";
    results.hidden = !lastGood;
    staleNote.textContent = `Last good result, for other inputs (dimmed below)${control ? ": fix the marked input to update it." : "."}`;
    staleNote.hidden = !lastGood;
    if (lastGood) results.setAttribute("aria-hidden", "true");
    results.inert = lastGood;
    setStatus(control ? "Fix the highlighted input to see results." : "These inputs could not be computed; see the message above.");
  }

  async function compute() {
    if (!root.isConnected || root.dataset.state !== "ready") return;
    const mine = seq;
    const first = (partial) => {
      if (root.isConnected && partial.seq === seq && answered !== seq) showPartial(partial);
    };
    const reply = await request(key, mine, name, readValues(root), "render", first);
    if (!root.isConnected) return;
    if (reply.type === "dead" || reply.superseded) return; // a death is reported to every calculator
    if (reply.seq !== seq) return; // answers older inputs: a newer request owns the result
    show(reply);
    addressAfterAnswer(); // the edit's inputs (and a box the answer filled) reach the address once it is painted
  }

  function start() {
    failure = null;
    setState("loading");
    engine().then(
      () => {
        if (!root.isConnected || root.dataset.state !== "loading") return;
        setState("ready");
        if (!root.dataset.readyMs) root.dataset.readyMs = String(Math.round(performance.now() - started));
        compute();
      },
      (err) => {
        if (!root.isConnected) return;
        fail(`Live calculation is unavailable: the live calculator could not start (${clip(err.message)}).`, true);
      },
    );
  }

  function changed() {
    if (!owned()) return; // a calculator left behind by navigation never touches another page
    syncConfig();
    const now = JSON.stringify(readValues(root));
    if (now === lastValues) return; // nothing changed (a blur after typing): no recompute, no flicker
    lastValues = now;
    seq += 1;
    root.dataset.seq = String(seq);
    edited = true;
    const state = root.dataset.state;
    if (state === "ready") {
      // The request goes first (no debounce: the worker computes only the newest and answers older ones
      // "superseded"), so the engine works while this thread updates the form, the address and the status.
      compute();
      syncEnabled(root);
      syncUrlLater();
      markStaleSoon("Updating…");
      holdForFirstAnswer();
      return;
    }
    syncEnabled(root);
    syncUrl();
    if (state === "error") {
      if (failure && !failure.permanent && !bootFailure) {
        markStale("Restarting the live engine…");
        start();
      } else {
        explainUnavailable();
      }
      return;
    }
    markStale("Your numbers will be computed as soon as the engine has loaded…");
    holdForFirstAnswer();
  }

  const controller = {
    root,
    key,
    warmed({ renders, ok }) {
      root.dataset.warmed = ok ? String(renders) : "failed";
    },
    followUnit(unit) {
      if (!owned() || !unitControl || valueOf(unitControl) === unit || unusable(unitControl, unit)) return;
      setValue(unitControl, unit);
      changed();
    },
    engineDied(message, permanent) {
      if (!root.isConnected) {
        controllers.delete(controller);
        return;
      }
      if (root.dataset.state !== "ready") return;
      fail(`Live calculation stopped: the Python engine failed (${clip(message)}).`, permanent);
    },
  };
  controllers.add(controller);

  form.addEventListener("input", applySets); // before `changed` reads the values
  form.addEventListener("change", applySets);
  form.addEventListener("input", changed);
  form.addEventListener("change", changed);
  form.addEventListener("submit", (event) => event.preventDefault());
  form.addEventListener("change", (event) => {
    if (event.target === unitControl && owned()) chooseUnit(valueOf(unitControl), controller);
  });
  results.addEventListener("click", async (event) => {
    const button = event.target.closest("[data-copy-code]");
    const block = button && button.closest("[data-code-block]");
    if (!block || !owned()) return;
    const code = block.querySelector(`[data-code="${CSS.escape(button.dataset.copyCode)}"] code`);
    const note = block.querySelector("[data-copy-code-note]");
    if (!code || !note) return;
    if (results.dataset.stale) {
      note.textContent = "The numbers are updating; copy again when they are shown.";
      return;
    }
    try {
      await navigator.clipboard.writeText(code.textContent);
      note.textContent = button.dataset.copyCode === "python" ? "Python copied." : "Command copied.";
    } catch {
      // No clipboard: select the code for the reader to copy by hand.
      const range = document.createRange();
      range.selectNodeContents(code);
      getSelection().removeAllRanges();
      getSelection().addRange(range);
      note.textContent = "Selected: copy it with Ctrl+C (⌘C).";
    }
  });
  copyButton.addEventListener("click", async () => {
    if (!owned()) return;
    let url;
    try {
      url = await linkUrl();
    } catch (err) {
      copyNote.textContent = `Not copied: the link could not be made (${clip(err.message)}).`;
      return;
    }
    url.hash = `calc-${id}`;
    if (url.href.length > LINK_LIMIT) {
      root.dataset.linkTooLong = String(url.href.length);
      copyNote.textContent =
        `Not copied: a link to these numbers would be ${url.href.length.toLocaleString("en")} characters, more than ` +
        `the ${LINK_LIMIT.toLocaleString("en")} a link can be trusted to keep (chat apps, mail and some servers cut ` +
        "longer ones without saying so). Trim the pasted config.json to the keys that give the model's shape, or " +
        "share the file itself.";
      return;
    }
    delete root.dataset.linkTooLong;
    try {
      await navigator.clipboard.writeText(url.href);
      copyNote.textContent = "Link copied.";
    } catch {
      // No clipboard: offer the link to copy by hand (no dialog).
      copyNote.textContent = "Copy this link: ";
      const field = document.createElement("input");
      field.type = "text";
      field.readOnly = true;
      field.value = url.href;
      field.setAttribute("aria-label", "Link to these numbers");
      copyNote.append(field);
      field.select();
    }
  });

  const begin = () => {
    showProblems();
    syncEnabled(root);
    syncConfig();
    lastValues = JSON.stringify(readValues(root));
    holdForFirstAnswer();
    if (fromUrl) markStale("Computing the numbers from the link…");
    else if (restated) markStale("Computing the numbers in your units…");
    else setStatus("Pre-rendered at build time; loading the live engine…");
    start();
  };
  if (unpacking.length) {
    markStale("Reading the config.json in the link…");
    Promise.all(unpacking).then(begin);
  } else {
    begin();
  }
}

document$.subscribe(() => {
  for (const controller of [...controllers]) if (!controller.root.isConnected) controllers.delete(controller);
  linkUnit = null; // a link's unit holds for its page only
  unitSwitch();
  for (const root of document.querySelectorAll("[data-calc]")) mount(root);
});
