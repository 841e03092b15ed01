// Browser notifications when one of your runs waits for your approval. Opt-in only: the
// permission is asked when the person clicks "Turn on" on the Settings page, the choice is kept
// in this browser's localStorage, and only then does a page open /ws/notices/ and show a
// Notification for each notice. Clicking one opens the run.
(function () {
  "use strict";

  var CHOICE_KEY = "agentdesk.notifications";
  var MAX_RETRY_MS = 30000;
  var supported = "Notification" in window;
  var socket = null;
  var retryMs = 1000;
  var retryTimer = null;

  function chosen() {
    try {
      return window.localStorage.getItem(CHOICE_KEY) === "on";
    } catch (error) {
      return false; // storage refused (private mode, policy): nothing remembered, nothing shown
    }
  }

  function remember(on) {
    try {
      window.localStorage.setItem(CHOICE_KEY, on ? "on" : "off");
    } catch (error) {
      /* the choice lasts for this page only */
    }
  }

  function active() {
    return supported && chosen() && Notification.permission === "granted";
  }

  function show(notice) {
    if (!active()) return;
    // The run's own page, in front of the person, opens its approval dialog already.
    if (document.visibilityState === "visible" && window.location.pathname === notice.url) return;
    var notification = new Notification(notice.title, { body: notice.body, tag: notice.tag });
    notification.onclick = function () {
      window.focus();
      window.location.assign(notice.url);
      if (typeof notification.close === "function") notification.close();
    };
  }

  function connect() {
    if (socket || !active()) return;
    var scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    socket = new WebSocket(scheme + "//" + window.location.host + "/ws/notices/");
    socket.onopen = function () {
      retryMs = 1000;
      document.documentElement.setAttribute("data-notices", "live");
    };
    socket.onmessage = function (event) {
      var notice;
      try {
        notice = JSON.parse(event.data);
      } catch (error) {
        return;
      }
      if (notice && notice.type === "approval_waiting") show(notice);
    };
    socket.onclose = function (event) {
      socket = null;
      document.documentElement.removeAttribute("data-notices");
      if (event.code === 4401 || !active()) return; // signed out, or turned off
      retryTimer = window.setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
    };
  }

  function disconnect() {
    window.clearTimeout(retryTimer);
    if (!socket) return;
    var closing = socket;
    socket = null;
    closing.onclose = null;
    closing.close();
    document.documentElement.removeAttribute("data-notices");
  }

  // The Settings page's controls (templates/agents/partials/notifications_settings.html).
  function drawControls() {
    var state = document.getElementById("notifications-state");
    var button = document.getElementById("notifications-toggle");
    var unsupported = document.getElementById("notifications-unsupported");
    if (!state || !button) return;
    if (!supported) return; // the page's own text already says so
    if (unsupported) unsupported.hidden = true;
    button.hidden = false;
    if (active()) {
      state.setAttribute("data-state", "on");
      state.textContent = "On in this browser.";
      button.textContent = "Turn off notifications";
    } else if (Notification.permission === "denied") {
      state.setAttribute("data-state", "blocked");
      state.textContent =
        "Blocked: this browser refuses AgentDesk's notifications. Allow them in the site's settings (the icon beside the address), then turn them on here.";
      button.textContent = "Turn on notifications";
    } else {
      state.setAttribute("data-state", "off");
      state.textContent = "Off in this browser.";
      button.textContent = "Turn on notifications";
    }
  }

  function toggle() {
    if (active()) {
      remember(false);
      disconnect();
      drawControls();
      return;
    }
    // Asked only here, on the person's click: browsers ignore (or punish) unprompted asks.
    Promise.resolve(Notification.requestPermission()).then(function (permission) {
      remember(permission === "granted");
      drawControls();
      connect();
    });
  }

  function start() {
    var button = document.getElementById("notifications-toggle");
    if (button && supported) button.addEventListener("click", toggle);
    drawControls();
    connect();
  }

  // Turned on or off in another tab: follow it.
  window.addEventListener("storage", function (event) {
    if (event.key !== CHOICE_KEY) return;
    if (active()) connect();
    else disconnect();
    drawControls();
  });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
