// A contract agent's tab on the chat page: while an attempt runs, a socket on its
// conversation (ws/conversations/<id>/?after=SEQ) says something changed, and the output
// that follows is fetched as HTML (GET /chat/agents/<id>/output?after=SEQ&events=SEQ), drawn
// by the templates that drew the page: the chat rows' renderer, and the evaluations.
//
// The output follows new lines only while the person is at its bottom. When the attempt's
// status changes (it ended, or another attempt started) the tab is loaded again: its buttons
// and form are the server's to draw.
(function () {
  "use strict";

  var AT_BOTTOM_PX = 40;

  function atBottom(box) {
    return box.scrollHeight - box.scrollTop - box.clientHeight < AT_BOTTOM_PX;
  }

  function merge(panel, html) {
    var template = document.createElement("template");
    template.innerHTML = html;
    var update = template.content.querySelector(".agent-update");
    if (!update) return;
    if (update.dataset.run !== panel.dataset.run || update.dataset.status !== panel.dataset.status) {
      window.location.reload();
      return;
    }
    var box = panel.querySelector(".agent-output");
    var following = atBottom(box);
    var lastSeq = parseInt(panel.dataset.lastSeq, 10) || 0;
    var lastEvent = parseInt(panel.dataset.lastEvent, 10) || 0;
    update.querySelectorAll(".chat-rows > li").forEach(function (line) {
      if (document.getElementById(line.id)) return;
      var seq = parseInt(line.dataset.seq, 10) || 0;
      var event = parseInt(line.dataset.event, 10) || 0;
      if (line.dataset.event ? event <= lastEvent : seq <= lastSeq) return;
      var callId = line.dataset.resultFor;
      var slot = callId && box.querySelector(
        'details.chat-call[data-call-id="' + CSS.escape(callId) + '"] .chat-call-result',
      );
      if (slot) slot.replaceChildren.apply(slot, Array.from(line.children));
      else box.appendChild(line);
    });
    panel.dataset.lastSeq = String(Math.max(lastSeq, parseInt(update.dataset.lastSeq, 10) || 0));
    panel.dataset.lastEvent = String(Math.max(lastEvent, parseInt(update.dataset.lastEvent, 10) || 0));
    if (following) box.scrollTop = box.scrollHeight;
  }

  function refresh(panel) {
    window.AgentDeskLive.fetchNew(
      panel,
      function () {
        return (
          panel.dataset.outputUrl +
          "?after=" + (panel.dataset.lastSeq || 0) +
          "&events=" + (panel.dataset.lastEvent || 0)
        );
      },
      merge,
    );
  }

  function connect(panel) {
    window.AgentDeskLive.connect(
      panel,
      function () {
        return panel.dataset.socket + "?after=" + (panel.dataset.lastSeq || 0);
      },
      function () {
        refresh(panel); // whatever happened while it was away
      },
      function (message) {
        // Tokens are drawn once stored, as rows: everything else may have changed the output.
        if (message.type !== "token" && message.type !== "pong") refresh(panel);
      },
    );
  }

  function init() {
    document.querySelectorAll(".agent-panel[data-socket][data-status=running]").forEach(function (panel) {
      var box = panel.querySelector(".agent-output");
      box.scrollTop = box.scrollHeight;
      connect(panel);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
