// The MCP server form in the admin: show only the fieldset of the chosen transport.
(function () {
  "use strict";
  function setUp() {
    var transport = document.getElementById("id_transport");
    if (!transport) return;
    function show() {
      var stdio = transport.value === "stdio";
      document.querySelectorAll("fieldset.transport-stdio").forEach(function (f) { f.hidden = !stdio; });
      document.querySelectorAll("fieldset.transport-http").forEach(function (f) { f.hidden = stdio; });
    }
    transport.addEventListener("change", show);
    show();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUp);
  else setUp();
})();
