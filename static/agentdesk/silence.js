// The run page never looks frozen: while the run works (planning, a step, verifying) the
// panel's heading counts the seconds since the run's latest event (the phase it is in), and
// when nothing has come over its socket for LLM_SILENCE_NOTICE_SECONDS (no token, no event) it
// says it is waiting for the model and for how long. Counted here from what the page was
// rendered with (how long the run had been quiet then) and what the socket brings: no request
// of its own.
(function () {
  "use strict";

  var WORKING = ["planning", "running", "verifying"];

  function start() {
    var notice = document.getElementById("stream-silence");
    if (!notice) return;
    var after = parseFloat(notice.dataset.after) * 1000;
    if (!(after > 0)) return;
    var lastHeard = Date.now() - (parseFloat(notice.dataset.quietFor) || 0) * 1000;
    var elapsed = document.getElementById("stream-elapsed");
    var lastEvent = lastHeard;
    var seq = eventSeq();

    function eventSeq() {
      var marker = document.getElementById("run-last-seq");
      return marker ? marker.dataset.seq : "";
    }

    function waitingForTheModel() {
      var status = document.getElementById("run-status");
      if (!status || WORKING.indexOf(status.dataset.status) < 0) return false;
      // A tool at work, or one waiting for a person, is not the model keeping quiet.
      return !document.querySelector(
        "#run-live .tool-call[data-status=running], #run-live .tool-call[data-status=waiting_approval]",
      );
    }

    function update() {
      var quiet = Date.now() - lastHeard;
      var show = quiet >= after && waitingForTheModel();
      if (show) notice.textContent = "Waiting for the model (" + Math.floor(quiet / 1000) + " s)…";
      notice.hidden = !show;
      if (elapsed) {
        var status = document.getElementById("run-status");
        var working = !!status && WORKING.indexOf(status.dataset.status) >= 0;
        elapsed.textContent = working ? "· " + Math.floor((Date.now() - lastEvent) / 1000) + " s" : "";
      }
    }

    document.addEventListener("htmx:wsAfterMessage", function () {
      lastHeard = Date.now();
      // An event (not a token) moves the page's last seq: a new phase, or a step in it.
      if (eventSeq() !== seq) {
        seq = eventSeq();
        lastEvent = lastHeard;
      }
      update();
    });
    setInterval(update, 1000);
    update();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
