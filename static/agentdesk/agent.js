// A contract agent's tab on the chat page: while an attempt runs, a socket on its
// conversation (ws/conversations/<id>/?after=SEQ) says something changed, and the output
// that follows is fetched as HTML (GET /chat/agents/<id>/output?after=SEQ&events=SEQ), drawn
// by the templates that drew the page: the chat rows' renderer, and the evaluations.
//
// What exists before it is stored is drawn as the chat draws it (chat.js's AgentDeskStream): the
// tokens and reasoning of the request in flight and its tool calls, in a live box under the
// output that goes once the cycle's rows are stored. A reload shows the stored rows and the
// socket replays the attempt's calls. While nothing has come for LLM_SILENCE_NOTICE_SECONDS,
// the tab says it is waiting for the model.
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
    var added = false;
    update.querySelectorAll(".chat-rows > li").forEach(function (line) {
      if (document.getElementById(line.id)) return;
      var seq = parseInt(line.dataset.seq, 10) || 0;
      var event = parseInt(line.dataset.event, 10) || 0;
      if (line.dataset.event ? event <= lastEvent : seq <= lastSeq) return;
      var callId = line.dataset.resultFor;
      var slot = callId && box.querySelector(
        'details.chat-call[data-call-id="' + CSS.escape(callId) + '"] .chat-call-result',
      );
      added = true;
      if (slot) slot.replaceChildren.apply(slot, Array.from(line.children));
      else box.appendChild(line);
    });
    // What was streamed is now stored (and drawn from the rows): the live copy goes.
    if (added && window.AgentDeskStream) window.AgentDeskStream.clear(panel);
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
        onMessage(panel, message);
      },
    );
  }

  function onMessage(panel, message) {
    var stream = window.AgentDeskStream;
    if (message.type === "pong") return;
    panel._heard = Date.now();
    if (message.type === "token") {
      if (stream) stream.addToken(panel, message.run_id, message.token || "", !!message.reasoning);
      return;
    }
    if (message.type === "run_event" && stream) {
      var event = message.event || {};
      if (event.type === "tool_call") stream.addCall(panel, message.run_id, event.payload || {});
      else if (event.type === "tool_result") stream.addResult(panel, event.payload || {});
    }
    refresh(panel); // anything else may have changed the output
  }

  // "Waiting for the model (N s)…" while nothing came for the setting's seconds, unless a tool
  // of the attempt is at work (a live call without its result).
  function watchSilence(panel) {
    var notice = panel.querySelector(".agent-silence");
    var after = notice ? parseFloat(notice.dataset.after) * 1000 : 0;
    if (!(after > 0)) return;
    panel._heard = Date.now();
    window.setInterval(function () {
      var quiet = Date.now() - panel._heard;
      var toolAtWork = panel.querySelector(".agent-live .chat-call-result .muted");
      var show = quiet >= after && !toolAtWork;
      if (show) notice.textContent = "Waiting for the model (" + Math.floor(quiet / 1000) + " s)…";
      notice.hidden = !show;
    }, 1000);
  }

  function init() {
    document.querySelectorAll(".agent-panel[data-socket][data-status=running]").forEach(function (panel) {
      var box = panel.querySelector(".agent-output");
      box.scrollTop = box.scrollHeight;
      connect(panel);
      watchSilence(panel);
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
