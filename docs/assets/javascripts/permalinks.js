// "Copy link" on every heading: clicking a heading's permalink (¶) copies the section's full URL,
// query string included (so a calculator state travels with it), and still moves to the section.
document$.subscribe(() => {
  for (const link of document.querySelectorAll(".md-typeset .headerlink")) {
    if (link.dataset.copyBound) continue;
    link.dataset.copyBound = "true";
    link.setAttribute("aria-label", "Copy link to this section");
    link.addEventListener("click", async () => {
      const url = new URL(link.getAttribute("href"), location.href).href;
      try {
        await navigator.clipboard.writeText(url);
        link.dataset.copied = "true";
        setTimeout(() => delete link.dataset.copied, 1500);
      } catch {
        // Clipboard unavailable (insecure context or denied): the link still navigates and the URL bar has it.
      }
    });
  }
});
