// What a chat tab (chat.js) and an agent tab (agent.js) share: a socket on a conversation that
// comes back after a drop with the last seq the tab holds (nothing twice, nothing missed), one
// fetch of what is new at a time, and the tab's live indicator and "connection lost" notice.
window.AgentDeskLive = (function () {
  "use strict";

  var RECONNECT_MAX_MS = 10000;

  function setLive(panel, state) {
    var indicator = panel.querySelector(".live-indicator");
    if (indicator) indicator.dataset.state = state;
    var notice = panel.querySelector(".chat-offline");
    if (notice) notice.hidden = state !== "offline";
  }

  // GET url() as HTML for merge(panel, html). One fetch at a time per tab; asked for more
  // while one runs, it fetches once more after it.
  function fetchNew(panel, url, merge) {
    if (panel._fetching) {
      panel._again = true;
      return;
    }
    panel._fetching = true;
    panel._again = false;
    fetch(url(), { credentials: "same-origin", headers: { "HX-Request": "true" } })
      .then(function (response) {
        if (response.redirected || !response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (html) {
        merge(panel, html);
      })
      .catch(function () {
        setLive(panel, "offline");
      })
      .finally(function () {
        panel._fetching = false;
        if (panel._again) fetchNew(panel, url, merge);
      });
  }

  // A socket on url() (a path, asked again at each reconnect for the seq then held): onOpen()
  // when it is up, onMessage(message) for each JSON message; while the tab is in the page it
  // reconnects after a drop, waiting 0.5 s, 1 s, 2 s, … up to 10 s.
  function connect(panel, url, onOpen, onMessage) {
    var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    var socket = new WebSocket(scheme + window.location.host + url());
    panel._socket = socket;
    socket.addEventListener("open", function () {
      panel._retry = 0;
      setLive(panel, "live");
      onOpen();
    });
    socket.addEventListener("message", function (event) {
      var message;
      try {
        message = JSON.parse(event.data);
      } catch (error) {
        return; // not ours to show
      }
      onMessage(message);
    });
    socket.addEventListener("close", function () {
      setLive(panel, "offline");
      if (!panel.isConnected) return;
      var delay = Math.min(RECONNECT_MAX_MS, 500 * Math.pow(2, panel._retry || 0));
      panel._retry = (panel._retry || 0) + 1;
      window.setTimeout(function () {
        if (panel.isConnected) connect(panel, url, onOpen, onMessage);
      }, delay);
    });
  }

  return { setLive: setLive, fetchNew: fetchNew, connect: connect };
})();
