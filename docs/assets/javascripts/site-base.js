// Instant navigation wherever the site is served (another port, another host, or under a path such as /team/llm/).
//
// Material's instant navigation only intercepts a click on a link listed in sitemap.xml. The sitemap's <loc>s
// carry the build's site_url, and Material swaps in the current protocol and hostname only, not the port or the
// path, so a site built for http://127.0.0.1:8000/ and served anywhere else reloaded on every click (and booted
// Pyodide again). This script, loaded in <head> before Material's bundle, rewrites the locs from the build's
// site_url (data-site-url) to where the site is actually served, at the one place Material reads them: the
// sitemap document it parses with DOMParser. Everything else parsed is left alone.
(() => {
  "use strict";
  const script = document.currentScript;
  const built = script && script.dataset.siteUrl; // the build's site_url, with its trailing slash
  if (!built) return;
  const actual = new URL("../../", script.src).href; // this file is <site>/assets/javascripts/site-base.js
  if (actual === built) return;

  const rebase = (url) => (url.startsWith(built) ? actual + url.slice(built.length) : url);
  const parse = DOMParser.prototype.parseFromString;
  DOMParser.prototype.parseFromString = function parseFromString(text, type) {
    const doc = parse.call(this, text, type);
    if (type === "text/xml" && doc.documentElement && doc.documentElement.localName === "urlset") {
      for (const loc of doc.getElementsByTagNameNS("*", "loc")) loc.textContent = rebase(loc.textContent.trim());
      for (const link of doc.querySelectorAll("[rel=alternate][href]")) link.setAttribute("href", rebase(link.getAttribute("href")));
    }
    return doc;
  };

  // The engine's wheel (hooks/lc_build.py's [[wheel]]: the CLI page's link and its "pip install" line; the first
  // line of every calculator's pre-rendered copy block) is addressed from site_url, an absolute address pip needs;
  // here it follows the page to where the site is served (issue 19). calc.mjs readdresses a live render's.
  const wheel = /\bassets\/[^\s/"'<>]+\.whl\b/;
  const rewheel = () => {
    for (const a of document.querySelectorAll(".md-typeset a[href]")) {
      const href = a.getAttribute("href");
      if (href.startsWith(built) && wheel.test(href)) a.setAttribute("href", rebase(href));
    }
    for (const code of document.querySelectorAll(".md-typeset code")) {
      if (!code.textContent.includes(built)) continue;
      const walk = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
      for (let node = walk.nextNode(); node; node = walk.nextNode()) {
        const text = node.data.replace(/\S+/g, (word) => (wheel.test(word) ? rebase(word) : word));
        if (text !== node.data) node.data = text;
      }
    }
  };
  document.addEventListener("DOMContentLoaded", () => {
    if (globalThis.document$) globalThis.document$.subscribe(rewheel); // and after each instant navigation
    else rewheel();
  });
})();

// A shared link's numbers before calc.mjs mounts (issue 19). The build pre-renders each calculator's answer for its
// defaults; a link (?<calculator id>.<field>=…) asks for other inputs, and for the seconds until calc.mjs mounts the
// page would show the defaults' verdict under the link's address. This runs in <head>, before the body is parsed:
// as the parser inserts each calculator the link names (data-calc-id), it marks it data-link-cover, in the
// observer's microtask at the end of the parser's task, so before any paint; calc.css then hides that calculator's
// answer until it is mounted and says "Computing the numbers from the link…" at its top. The other calculators of
// the page keep their pre-rendered answers: they are for the inputs they show. Once mounted, calc.mjs shows what it
// computes (or the pre-rendered answer, when the link changes nothing).
(() => {
  "use strict";
  const ids = new Set();
  for (const key of new URLSearchParams(location.search).keys()) {
    const found = /^([a-z][a-z0-9-]*)\.[A-Za-z_]/.exec(key);
    if (found) ids.add(found[1]);
  }
  if (!ids.size) return;
  const cover = (el) => {
    if (ids.has(el.dataset.calcId)) el.dataset.linkCover = "";
  };
  const look = (records) => {
    for (const record of records) {
      for (const node of record.addedNodes) {
        if (node.nodeType !== Node.ELEMENT_NODE) continue;
        if (node.matches(".lc-calc[data-calc-id]")) cover(node);
        for (const el of node.querySelectorAll(".lc-calc[data-calc-id]")) cover(el);
      }
    }
  };
  const observer = new MutationObserver(look);
  observer.observe(document.documentElement, { childList: true, subtree: true });
  document.addEventListener("DOMContentLoaded", () => {
    look(observer.takeRecords());
    observer.disconnect(); // the page is parsed; calc.mjs mounts its calculators from here
  });
})();
