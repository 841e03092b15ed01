// The header's menu on narrow screens: the Menu button shows and hides the nav, the MCP servers
// and logout. Loaded in <head> without defer so the "js" class is on <html> before the first
// paint: phones never see the whole nav flash open. Without JavaScript the menu stays open
// (app.css and screens.css only collapse it under html.js).
(function () {
  "use strict";

  document.documentElement.classList.add("js");

  function setOpen(header, open) {
    header.dataset.menu = open ? "open" : "closed";
    var toggle = header.querySelector(".menu-toggle");
    if (toggle) toggle.setAttribute("aria-expanded", open ? "true" : "false");
  }

  // Delegated, so it works for a header that is parsed after this script runs.
  document.addEventListener("click", function (event) {
    var toggle = event.target.closest(".menu-toggle");
    if (!toggle) return;
    var header = toggle.closest(".site-header");
    setOpen(header, header.dataset.menu !== "open");
  });

  // Escape closes an open menu and gives the focus back to its button.
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    var header = document.querySelector(".site-header[data-menu=open]");
    if (!header) return;
    setOpen(header, false);
    var toggle = header.querySelector(".menu-toggle");
    if (toggle) toggle.focus();
  });
})();
