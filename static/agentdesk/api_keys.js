// The Settings page's "Copy" button for a key just created (shown once).
(function () {
  "use strict";

  function copied(state, text) {
    if (state) state.textContent = text;
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-copy-target]") : null;
    if (!button) return;
    var input = document.getElementById(button.getAttribute("data-copy-target"));
    var state = document.getElementById("copy-api-key-state");
    if (!input) return;
    input.focus();
    input.select();
    var fallback = function () {
      // Older browsers and non-secure origins: the selection is still there to copy by hand.
      var done = false;
      try {
        done = document.execCommand("copy");
      } catch (error) {
        done = false;
      }
      copied(state, done ? "Copied." : "Selected: press Ctrl+C (⌘C) to copy.");
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(input.value).then(function () {
        copied(state, "Copied.");
      }, fallback);
    } else {
      fallback();
    }
  });
})();
