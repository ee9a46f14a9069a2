// Charts: every [data-chart] is rendered live with vega-embed from the Vega-Lite spec it carries
// (data-chart-spec, made by calc.guide.charts). The build already put one SVG per palette inside
// (hooks/lc_charts.py), so a chart is there at first paint and with JavaScript off; this module
// replaces them with a live rendering, and renders again when:
//   - a calculator shows new results (its fragment arrives without SVG: Pyodide cannot run
//     vl-convert), written anew or patched in place: a MutationObserver sees either, so calc.mjs
//     needs no hook. A chart that comes back unchanged gets its finished SVG back before the next paint;
//   - the reader switches palette (Material's data-md-color-scheme on <body>).
//
// The site's policy forbids eval: specs are parsed to an AST and run by vega-interpreter
// (`ast: true`); vega-embed's own style sheet and tooltip (which inject <style>) are off.
//
// A chart is drawn live only when it comes near the viewport (see `drawable`): tests scroll it into view first.
//
// Signals on each [data-chart] (tests wait on these, never on time):
//   data-chart-state   prerendered (build) | pending (no SVG yet, or one of older inputs) | live | error
//   data-chart-scheme  the palette of the live rendering ("default" or "slate")
//   data-chart-rendered  a fingerprint of the palette and spec the live rendering shows
//   data-chart-renders how many live renderings this element has had (a reused one counts)
//   data-chart-near    present once the chart has come near the viewport (it may be drawn from then on)

const VEGA = new URL("../vega/", import.meta.url);

let runtime = null; // Promise of {embed, expr, themes}

function loadRuntime() {
  if (!runtime) {
    runtime = (async () => {
      // The UMD bundles set globalThis.vega / vegaLite / vegaEmbed when run (as modules, in order).
      await import(new URL("vega.min.js", VEGA).href);
      await import(new URL("vega-lite.min.js", VEGA).href);
      await import(new URL("vega-embed.min.js", VEGA).href);
      const { expressionInterpreter } = await import(new URL("vega-interpreter.js", VEGA).href);
      const themes = await (await fetch(new URL("themes.json", VEGA))).json();
      return { embed: globalThis.vegaEmbed, expr: expressionInterpreter, themes };
    })();
  }
  return runtime;
}

const scheme = () => (document.body.getAttribute("data-md-color-scheme") === "slate" ? "slate" : "default");

// Sized to the container: a chart is drawn as wide as its view (not drawn at the spec's 560 px plotting width and
// scaled down, which took its 12 px labels to 5-8 px in a calculator column or on a phone), so its text stays at
// the theme's size. The width is in the rendering's key (a resize redraws it, in steps of WIDTH_STEP px); side by
// side panels (hconcat) are stacked (vconcat) below NARROW px. What a view needs besides its plotting area (axes,
// labels, legend) is learnt from the first rendering of each chart and used from then on (one rendering a change).
const WIDTH_STEP = 16;
const NARROW = 480;
const MIN_PLOT = 120;
const TITLE_CHAR = 8; // px a character of a 14 px bold title takes, on average
const LEGEND_COLUMN = 180; // px a legend column takes with a label of about 20 characters at 12 px
const overheads = new Map(); // chart name + layout -> px of the drawing that is not plotting area

const viewWidth = (figure) => {
  const view = figure.querySelector(".lc-chart__view");
  const width = view ? view.clientWidth : 0;
  return width > 0 ? Math.floor(width / WIDTH_STEP) * WIDTH_STEP : 0;
};

/** The panels whose numeric `width` sets the drawing's width, and whether the spec was stacked for `width`. */
function fitted(spec, width) {
  if (!width) return { spec, panels: [], stacked: false };
  let out = structuredClone(spec);
  let stacked = false;
  if (Array.isArray(out.hconcat) && width < NARROW) {
    out = { ...out, vconcat: out.hconcat };
    delete out.hconcat;
    stacked = true;
  }
  narrowLegends(out, width);
  wrapTitles(out, width);
  let panels;
  if (Array.isArray(out.hconcat)) panels = out.hconcat;
  else if (Array.isArray(out.vconcat)) panels = out.vconcat;
  else panels = [out];
  panels = panels.filter((panel) => panel && typeof panel === "object" && typeof panel.width === "number");
  return { spec: out, panels, stacked, across: Array.isArray(out.hconcat) ? panels.length : 1 };
}

/** Legends laid out in columns get as many as `width` holds (a 3-column legend set a phone chart's width). */
function narrowLegends(node, width) {
  if (!node || typeof node !== "object") return;
  if (Array.isArray(node)) {
    for (const item of node) narrowLegends(item, width);
    return;
  }
  for (const [key, value] of Object.entries(node)) {
    if (key === "data") continue;
    if (key === "legend" && value && typeof value.columns === "number") {
      value.columns = Math.max(1, Math.min(value.columns, Math.floor(width / LEGEND_COLUMN)));
    } else {
      narrowLegends(value, width);
    }
  }
}

/** Titles longer than `width` wrap onto lines (a title wider than the plot set the drawing's width). */
function wrapTitles(node, width) {
  if (!node || typeof node !== "object" || Array.isArray(node)) return;
  const perLine = Math.max(16, Math.floor(width / TITLE_CHAR));
  const wrap = (text) => {
    if (typeof text !== "string" || text.length <= perLine) return text;
    const lines = [""];
    for (const word of text.split(" ")) {
      const last = lines[lines.length - 1];
      if (last && last.length + 1 + word.length > perLine) lines.push(word);
      else lines[lines.length - 1] = last ? `${last} ${word}` : word;
    }
    return lines;
  };
  if (typeof node.title === "string") node.title = wrap(node.title);
  else if (node.title && typeof node.title === "object") {
    node.title.text = wrap(node.title.text);
    if (node.title.subtitle) node.title.subtitle = wrap(node.title.subtitle);
  }
  for (const key of ["hconcat", "vconcat", "layer"]) for (const child of node[key] || []) wrapTitles(child, width);
}

/** Set the panels' widths so that the drawing is `width` px wide, given `overhead` px that are not plotting area. */
function size(fit, width, overhead) {
  const plot = Math.max(MIN_PLOT, Math.floor((width - overhead) / Math.max(1, fit.across)));
  for (const panel of fit.panels) panel.width = plot;
  return plot;
}

/** A short fingerprint of a palette + spec (FNV-1a, 32 bits): what a live rendering shows. */
function fingerprint(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return (h >>> 0).toString(36);
}

const keyOf = (figure) => `${scheme()} ${viewWidth(figure)} ${figure.dataset.chartSpec || ""}`; // what a rendering shows
const inFlight = new WeakMap(); // figure -> key of the rendering on its way
const views = new WeakMap(); // figure -> the vega-embed result shown
const shown = new WeakMap(); // figure -> the .lc-chart__live it shows (or last showed)
const made = new Map(); // key -> a rendered .lc-chart__live, reused when the same chart comes back
// figure -> {result, holder, shape, palette, width} of its newest vega-embed view: new numbers in a chart of the
// same shape (only its data differ) go into that view (view.change(...).runAsync()), not into a new embedding.
const live = new WeakMap();

/** The compiled Vega spec without its inline data: two specs with the same shape differ only in their numbers. */
const shapeOf = (compiled) =>
  JSON.stringify(compiled, (k, v) => ((k === "values" && Array.isArray(v)) || k === "description" ? undefined : v));

/** Put `spec`'s numbers into the figure's live view if only its data changed; false when it cannot. */
async function updateInPlace(figure, fit, config, palette, width) {
  const before = live.get(figure);
  const { vega, vegaLite } = globalThis;
  if (!before || before.palette !== palette || before.width !== width || !vegaLite?.compile || !vega?.changeset) {
    return false;
  }
  for (const panel of fit.panels) panel.width = before.plot; // the drawing keeps its size
  const compiled = vegaLite.compile(fit.spec, { config }).spec;
  if (shapeOf(compiled) !== before.shape) return false;
  const view = before.result.view;
  for (const data of compiled.data || []) {
    if (Array.isArray(data.values)) view.change(data.name, vega.changeset().remove(() => true).insert(data.values));
  }
  await view.runAsync();
  return true;
}
const MADE_MAX = 24;

/** Whether the figure shows a live rendering of its current spec in the current palette. */
function current(figure) {
  return (
    figure.dataset.chartState === "live" &&
    figure.dataset.chartRendered === fingerprint(keyOf(figure)) &&
    Boolean(figure.querySelector(".lc-chart__view > .lc-chart__live svg"))
  );
}

function show(figure, holder, key) {
  const target = figure.querySelector(".lc-chart__view");
  if (!target) return;
  if (target.childNodes.length !== 1 || target.firstChild !== holder) target.replaceChildren(holder);
  shown.set(figure, holder);
  figure.dataset.chartScheme = scheme();
  figure.dataset.chartRendered = fingerprint(key);
  figure.dataset.chartRenders = String(Number(figure.dataset.chartRenders || 0) + 1);
  figure.dataset.chartState = "live";
  delete figure.dataset.chartError;
}

// A chart is drawn live only once it comes near the viewport (issue 20): Vega, a quarter of the page's scripts, is
// loaded when the reader scrolls to the first chart, not while Pyodide boots, and a chart off screen is not redrawn
// on every keystroke. Until then it shows its pre-rendered SVG; one whose numbers changed meanwhile is marked
// `pending` (the SVG is of older inputs) and is drawn when it comes near.
const NEAR = "50% 0px"; // half a viewport above and below counts as near
const near = new WeakSet();
const firstSpec = new WeakMap(); // figure -> the spec its pre-rendered SVG shows
const watcher =
  typeof IntersectionObserver === "function"
    ? new IntersectionObserver(
        (entries) => {
          for (const entry of entries) {
            if (!entry.isIntersecting) continue;
            near.add(entry.target);
            entry.target.dataset.chartNear = ""; // the signal tests wait on after scrolling a chart into view
            watcher.unobserve(entry.target);
            render(entry.target);
          }
        },
        { rootMargin: NEAR },
      )
    : null;

/** Whether `figure` may be drawn now; if not, it is watched, and marked pending when what it shows is stale. */
function drawable(figure) {
  if (!watcher || near.has(figure)) return true;
  if (!firstSpec.has(figure)) firstSpec.set(figure, figure.dataset.chartSpec);
  watcher.observe(figure); // observing a figure twice is a no-op
  const stale = figure.dataset.chartState === "live" || firstSpec.get(figure) !== figure.dataset.chartSpec;
  if (stale && figure.dataset.chartState !== "pending") figure.dataset.chartState = "pending";
  return false;
}

async function render(figure) {
  if (!figure.isConnected || current(figure) || !drawable(figure)) return;
  const key = keyOf(figure);
  if (figure.dataset.chartFailed === fingerprint(key)) return; // tried: the pre-rendered SVG or the table stays
  const cached = made.get(key);
  if (cached) {
    // The same chart again (a calculator re-rendered the same numbers, or its results were patched in
    // place): put the finished SVG back at once, before the next paint, instead of a blank view.
    show(figure, cached.cloneNode(true), key);
    return;
  }
  if (inFlight.get(figure) === key) return;
  inFlight.set(figure, key);
  const palette = scheme();
  const target = figure.querySelector(".lc-chart__view");
  let stale = null;
  if (target && !target.querySelector("svg")) {
    // Results patched in place emptied the view: keep the previous chart there (stale, marked pending)
    // until the new one is drawn, so nothing below it jumps up and back down.
    stale = shown.get(figure) || null;
    if (stale) target.replaceChildren(stale);
    figure.dataset.chartState = "pending";
  }
  try {
    const width = viewWidth(figure);
    const fit = fitted(JSON.parse(figure.dataset.chartSpec), width);
    const { embed, expr, themes } = await loadRuntime();
    const options = {
      mode: "vega-lite",
      renderer: "svg",
      actions: false,
      ast: true,
      expr,
      config: themes[palette],
      defaultStyle: false,
      tooltip: false,
      logLevel: 0,
    };
    const learnt = `${figure.dataset.chart} ${fit.stacked ? "v" : "h"}`;
    if (await updateInPlace(figure, fit, options.config, palette, width)) {
      if (inFlight.get(figure) !== key) return; // a newer spec took over: its rendering shows
      inFlight.delete(figure);
      const { holder } = live.get(figure);
      made.set(key, holder.cloneNode(true));
      if (made.size > MADE_MAX) made.delete(made.keys().next().value);
      show(figure, holder, key);
      return;
    }
    let holder = null;
    let result = null;
    let plot = 0;
    for (let pass = 0; pass < 2; pass++) {
      const guess = overheads.has(learnt) ? overheads.get(learnt) : 140 * (fit.across || 1);
      plot = fit.panels.length ? size(fit, width, guess) : 0;
      if (result) result.finalize();
      holder = document.createElement("div");
      holder.className = "lc-chart__live";
      result = await embed(holder, fit.spec, options);
      const drawn = Number(holder.querySelector("svg")?.getAttribute("width")) || 0;
      if (!plot || !drawn) break;
      const overhead = drawn - plot * fit.across;
      overheads.set(learnt, overhead);
      if (overhead === guess || Math.abs(drawn - width) <= 4 || plot === MIN_PLOT) break;
    }
    const svg = holder.querySelector("svg");
    if (svg) {
      svg.setAttribute("aria-hidden", "true");
      svg.setAttribute("focusable", "false");
      svg.dataset.scheme = palette;
    }
    made.set(key, holder.cloneNode(true));
    if (made.size > MADE_MAX) made.delete(made.keys().next().value);
    if (inFlight.get(figure) !== key) {
      result.finalize(); // a newer spec or palette took over while this one rendered
      return;
    }
    inFlight.delete(figure);
    if (!figure.isConnected || keyOf(figure) !== key) {
      result.finalize();
      render(figure);
      return;
    }
    const previous = views.get(figure);
    if (previous) previous.finalize();
    views.set(figure, result);
    const shape = globalThis.vegaLite?.compile ? shapeOf(globalThis.vegaLite.compile(fit.spec, { config: options.config }).spec) : "";
    live.set(figure, { result, holder, shape, palette, width, plot });
    show(figure, holder, key);
  } catch (err) {
    if (inFlight.get(figure) !== key) return;
    inFlight.delete(figure);
    if (stale && stale.isConnected) stale.remove(); // never leave an old chart standing for new numbers
    // The pre-rendered SVGs (if any) stay; the table beside the chart still has every number.
    figure.dataset.chartFailed = fingerprint(key);
    figure.dataset.chartState = "error";
    figure.dataset.chartError = String(err && err.message ? err.message : err).slice(0, 200);
  }
}

function renderAll() {
  for (const figure of document.querySelectorAll("[data-chart]")) render(figure);
}

// Anything that touches a chart (new results written or patched in place, the spec attribute changed,
// the view emptied) or the palette: check the charts concerned, and render those not current.
const observer = new MutationObserver((records) => {
  const touched = new Set();
  let all = false;
  for (const record of records) {
    if (record.target === document.body && record.attributeName === "data-md-color-scheme") all = true;
    if (record.attributeName === "hidden" && record.target.querySelectorAll) {
      for (const figure of record.target.querySelectorAll("[data-chart]")) touched.add(figure); // shown: sized now
    }
    const owner = record.target.closest ? record.target.closest("[data-chart]") : null;
    if (owner) touched.add(owner);
    for (const node of record.addedNodes) {
      if (node.nodeType !== 1) continue;
      if (node.matches("[data-chart]")) touched.add(node);
      for (const figure of node.querySelectorAll("[data-chart]")) touched.add(figure);
    }
  }
  if (all) everyChart = true;
  for (const figure of touched) queued.add(figure);
  if (!frame) frame = requestAnimationFrame(drawQueued);
});

// Charts are drawn in the next animation frame, not in the task that wrote the new numbers: the numbers reach the
// screen first (issue 20: keystroke to number within one frame), and the chart follows before that frame's paint.
const queued = new Set();
let everyChart = false; // the palette changed: every chart
let frame = 0;
function drawQueued() {
  frame = 0;
  const figures = [...queued];
  queued.clear();
  if (everyChart) {
    everyChart = false;
    renderAll();
    return;
  }
  for (const figure of figures) render(figure);
}

function start() {
  observer.observe(document.body, {
    childList: true,
    subtree: true,
    attributes: true,
    attributeFilter: ["data-md-color-scheme", "data-chart-spec", "data-chart-state", "data-chart-rendered", "hidden"],
  });
  renderAll();
  // A new width (a phone turned, a window resized) redraws the charts whose width step changed, once a frame.
  let queued = false;
  addEventListener("resize", () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      renderAll();
    });
  });
}

if (document.body) start();
else document.addEventListener("DOMContentLoaded", start, { once: true });

document$.subscribe(renderAll);
