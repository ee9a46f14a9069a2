// Charts: every [data-chart] is rendered live with vega-embed from the Vega-Lite spec it carries
// (data-chart-spec, made by calc.charts). The build already put one SVG per palette inside
// (hooks/lc_charts.py), so a chart is there at first paint and with JavaScript off; this module
// replaces them with a live rendering, and renders again when:
//   - a calculator shows new results (its fragment arrives without SVG: Pyodide cannot run
//     vl-convert), seen by a MutationObserver, so calc.mjs needs no hook;
//   - the reader switches palette (Material's data-md-color-scheme on <body>).
//
// The site's policy forbids eval: specs are parsed to an AST and run by vega-interpreter
// (`ast: true`); vega-embed's own style sheet and tooltip (which inject <style>) are off.
//
// Signals on each [data-chart] (tests wait on these, never on time):
//   data-chart-state   prerendered (build) | pending (no SVG yet) | live | error
//   data-chart-scheme  the palette of the live rendering ("default" or "slate")
//   data-chart-renders how many live renderings this element has had

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
const views = new WeakMap(); // figure -> the vega-embed result shown
const tokens = new WeakMap(); // figure -> number of its latest render request
const wanted = new WeakMap(); // figure -> palette + spec of its latest render request

async function render(figure) {
  const key = `${scheme()} ${figure.dataset.chartSpec}`;
  if (wanted.get(figure) === key) return; // already shown, or on its way
  wanted.set(figure, key);
  const token = (tokens.get(figure) || 0) + 1;
  tokens.set(figure, token);
  const target = figure.querySelector(".lc-chart__view");
  if (!target) return;
  if (!target.querySelector("svg")) figure.dataset.chartState = "pending";
  let spec;
  try {
    spec = JSON.parse(figure.dataset.chartSpec);
  } catch {
    figure.dataset.chartState = "error";
    wanted.delete(figure);
    return;
  }
  const palette = scheme();
  try {
    const { embed, expr, themes } = await loadRuntime();
    const holder = document.createElement("div");
    holder.className = "lc-chart__live";
    const result = await embed(holder, spec, {
      mode: "vega-lite",
      renderer: "svg",
      actions: false,
      ast: true,
      expr,
      config: themes[palette],
      defaultStyle: false,
      tooltip: false,
      logLevel: 0,
    });
    if (tokens.get(figure) !== token || !figure.isConnected) {
      result.finalize();
      return;
    }
    const svg = holder.querySelector("svg");
    if (svg) {
      svg.setAttribute("aria-hidden", "true");
      svg.setAttribute("focusable", "false");
      svg.dataset.scheme = palette;
    }
    const previous = views.get(figure);
    if (previous) previous.finalize();
    views.set(figure, result);
    target.replaceChildren(holder);
    figure.dataset.chartScheme = palette;
    figure.dataset.chartRenders = String(Number(figure.dataset.chartRenders || 0) + 1);
    figure.dataset.chartState = "live";
  } catch (err) {
    if (tokens.get(figure) !== token) return;
    wanted.delete(figure);
    // The pre-rendered SVGs (if any) stay; the table beside the chart still has every number.
    figure.dataset.chartState = "error";
    figure.dataset.chartError = String(err && err.message ? err.message : err).slice(0, 200);
  }
}

function scan(root) {
  if (root.matches && root.matches("[data-chart]")) render(root);
  if (root.querySelectorAll) for (const figure of root.querySelectorAll("[data-chart]")) render(figure);
}

// New results (a calculator's live fragment) bring new [data-chart] elements.
const added = new MutationObserver((records) => {
  for (const record of records) for (const node of record.addedNodes) if (node.nodeType === 1) scan(node);
});

// A palette switch renders every chart on the page again in the other theme.
let lastScheme = null;
const palette = new MutationObserver(() => {
  if (scheme() === lastScheme) return;
  lastScheme = scheme();
  for (const figure of document.querySelectorAll("[data-chart]")) render(figure);
});

function start() {
  lastScheme = scheme();
  added.observe(document.body, { childList: true, subtree: true });
  palette.observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
}

if (document.body) start();
else document.addEventListener("DOMContentLoaded", start, { once: true });

document$.subscribe(() => {
  for (const figure of document.querySelectorAll("[data-chart]")) render(figure);
});
