// The search index waits for the reader (issue 20: the home page's first visit is bytes the reader did not ask for).
//
// Material's bundle requests search/search_index.json (141 kB brotli, the whole guide's text) as soon as any page
// loads, with an XMLHttpRequest. This script, loaded in <head> before the bundle, holds that one request's send()
// until the reader reaches for search: the search box gains focus (a click, or Material's "/", "s" and "f" keys),
// the search toggle is switched, or a pointer comes over the search button. A page opened with a query (?q=)
// sends it at once. Every other request is left alone. Until the index arrives Material shows its own
// "Initializing search" state, as it did while the index loaded before. document.documentElement.dataset.searchIndex
// says where it stands ("held", "sent"): the tests' signal.
(() => {
  "use strict";
  const INDEX = /\/search\/search_index\.json$/;
  const root = document.documentElement;
  let release = null;
  const held = new Promise((resolve) => {
    release = resolve;
  });
  const want = () => {
    if (root.dataset.searchIndex === "held") root.dataset.searchIndex = "sent";
    release();
  };
  if (new URLSearchParams(location.search).has("q")) want();

  const open = XMLHttpRequest.prototype.open;
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.open = function lcOpen(method, url, ...rest) {
    try {
      this.lcSearchIndex = INDEX.test(new URL(String(url), document.baseURI).pathname);
    } catch {
      this.lcSearchIndex = false;
    }
    return open.call(this, method, url, ...rest);
  };
  XMLHttpRequest.prototype.send = function lcSend(body) {
    if (!this.lcSearchIndex) return send.call(this, body);
    if (!root.dataset.searchIndex) root.dataset.searchIndex = "held";
    held.then(() => send.call(this, body));
    return undefined;
  };

  const isSearch = (el) =>
    el instanceof Element && Boolean(el.closest('[data-md-component="search"], label[for="__search"], #__search'));
  document.addEventListener("focusin", (e) => isSearch(e.target) && want(), true);
  document.addEventListener("change", (e) => isSearch(e.target) && want(), true);
  document.addEventListener("pointerover", (e) => isSearch(e.target) && want(), { capture: true, passive: true });
})();
