// Live pages: htmx's ws extension swaps the server's fragments in by id; this file keeps the
// reconnect gap-free, never shows an event twice, and makes changes visible.
(function () {
  "use strict";

  // A reconnect asks only for what the page is missing: the seq in its after= is the last one
  // the page holds now, not the one it was first rendered with.
  htmx.createWebSocket = function (url) {
    var marker = document.getElementById("run-last-seq");
    if (marker && marker.dataset.seq) {
      url = url.replace(/([?&]after=)\d*/, "$1" + marker.dataset.seq);
    }
    var socket = new WebSocket(url, []);
    socket.binaryType = htmx.config.wsBinaryType;
    return socket;
  };

  // Form errors come back as 4xx/503 partials meant to be shown in place.
  htmx.config.responseHandling = [
    { code: "204", swap: false },
    { code: "[23]..", swap: true },
    { code: "(400|409|413|429|503)", swap: true, error: false },
    { code: "[45]..", swap: false, error: true },
    { code: "...", swap: false },
  ];

  // A request that cannot be shown in place (a stale form's 403, a 404, a 500, no network)
  // never leaves the person guessing: its error appears above the form that sent it. The
  // server's own error fragment is used when it sent one.
  function showRequestError(source, html, text) {
    var form = (source && source.closest && source.closest("form")) || source;
    if (!form || !form.parentNode) return;
    var previous = form.previousElementSibling;
    if (previous && previous.hasAttribute("data-request-error")) previous.remove();
    var box = document.createElement("div");
    if (html && /class="error-box"/.test(html) && !/<html/i.test(html)) {
      box.innerHTML = html;
      box = box.firstElementChild || box;
    } else {
      box.className = "error-box";
      box.setAttribute("role", "alert");
      var line = document.createElement("p");
      var strong = document.createElement("strong");
      strong.textContent = text;
      line.appendChild(strong);
      box.appendChild(line);
    }
    box.setAttribute("data-request-error", "");
    form.parentNode.insertBefore(box, form);
  }

  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    showRequestError(
      event.detail.elt,
      xhr.responseText,
      "That did not work (HTTP " + xhr.status + "). Reload the page and try again.",
    );
  });
  document.addEventListener("htmx:sendError", function (event) {
    showRequestError(event.detail.elt, "", "AgentDesk could not be reached. Try again in a moment.");
  });

  // A whole page (the login page after a session ended, say) is never nested inside a part of
  // this one: the browser goes to it instead.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    if (!event.detail.shouldSwap || !xhr || !/^\s*<!doctype html/i.test(xhr.responseText)) return;
    if (event.detail.target === document.body) return;
    event.detail.shouldSwap = false;
    window.location.assign(xhr.responseURL || window.location.href);
  });

  function seqOf(element) {
    return parseInt(element && element.dataset.seq, 10) || 0;
  }

  // Controls as they read, whatever CSRF token their forms carry (a page has one, the socket's
  // fragments none: requests send it in a header) and however they are indented.
  function controlsKey(element) {
    var copy = element.cloneNode(true);
    copy.removeAttribute("hx-swap-oob");
    Array.from(copy.querySelectorAll("input[name=csrfmiddlewaretoken]")).forEach(function (input) {
      input.remove();
    });
    return copy.outerHTML.replace(/\s+/g, " ").replace(/> </g, "><");
  }

  function sameControls(incoming, current) {
    return controlsKey(incoming) === controlsKey(current);
  }

  var previousWidth = null;
  var logWasAtBottom = false;

  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var target = event.detail.target;
    var fragment = event.detail.fragment;
    if (!target || !fragment) return;
    if (target.id === "event-log") {
      logWasAtBottom = target.scrollHeight - target.scrollTop - target.clientHeight < 24;
      // An event the page already lists (a replay overlapping a live message) is dropped.
      Array.from(fragment.querySelectorAll ? fragment.querySelectorAll("li[id]") : []).forEach(
        function (item) {
          if (document.getElementById(item.id)) item.remove();
        },
      );
    } else if (target.id === "run-last-seq") {
      var incoming = fragment.querySelector ? fragment.querySelector("#run-last-seq") : fragment;
      if (seqOf(incoming) < seqOf(target)) event.detail.shouldSwap = false;
    } else if (target.id === "progress") {
      var bar = target.querySelector(".progress-bar");
      previousWidth = bar ? bar.style.width : null;
    } else if (target.id === "run-controls") {
      // An update that leaves the buttons as they are (a replay of the events the page was
      // rendered after, a status change that asks nothing new of the person) keeps the ones on
      // the page: a click that lands while they are replaced is lost, and so is the focus.
      var box = fragment.firstElementChild || fragment;
      if (box.id === "run-controls" && sameControls(box, target)) event.detail.shouldSwap = false;
    } else if (target.id === "approval") {
      // The same approval again (a replay, a status change) must not wipe what the person is
      // typing into its dialog, nor reopen a dialog they closed.
      var card = fragment.querySelector ? fragment.querySelector("#approval") : fragment;
      var incomingId = card && card.dataset ? card.dataset.approvalId : undefined;
      if (incomingId && incomingId === target.dataset.approvalId) event.detail.shouldSwap = false;
    }
  });

  function flash(element) {
    element.classList.remove("changed");
    void element.offsetWidth; // restart the animation
    element.classList.add("changed");
  }

  document.addEventListener("htmx:oobAfterSwap", function (event) {
    var element = event.target;
    if (!(element instanceof HTMLElement)) return;
    if (element.id === "progress") {
      var bar = element.querySelector(".progress-bar");
      if (bar && previousWidth !== null && previousWidth !== bar.style.width) {
        var width = bar.style.width;
        bar.style.width = previousWidth;
        requestAnimationFrame(function () {
          requestAnimationFrame(function () {
            bar.style.width = width;
          });
        });
      }
      previousWidth = null;
    }
    if (element.matches("#run-status, .step, tr[id^=run-row-]")) flash(element);
  });

  // The log follows new events unless the reader scrolled up to look at older ones.
  document.addEventListener("htmx:wsAfterMessage", function () {
    var log = document.getElementById("event-log");
    if (log && logWasAtBottom) followLog(log);
    logWasAtBottom = false;
  });

  // Scrolled to its end, the log would show its top row cut in half: the box is made shorter
  // by the part of that row still showing, so it shows whole rows only.
  function followLog(log) {
    log.style.maxHeight = "";
    log.scrollTop = log.scrollHeight;
    var top = log.getBoundingClientRect().top + log.clientTop;
    var rows = log.children;
    for (var i = 0; i < rows.length; i++) {
      var box = rows[i].getBoundingClientRect();
      if (box.bottom <= top) continue;
      if (box.top < top) {
        log.style.maxHeight = log.offsetHeight - (box.bottom - top) + "px";
        log.scrollTop = log.scrollHeight;
      }
      break;
    }
  }

  // A run started elsewhere (another tab, a restart) gets a row at the top of the dashboard
  // when it shows the newest runs unfiltered; any other view offers a refresh instead. A run
  // the page knew of that is not on it (another page, filtered out) changes nothing here.
  document.addEventListener("htmx:oobErrorNoTarget", function (event) {
    var content = event.detail.content;
    var panel = document.getElementById("runs-panel");
    var body = document.querySelector("#runs tbody");
    if (!panel || !body || !content || !/^run-row-/.test(content.id || "")) return;
    var runId = parseInt(content.id.slice("run-row-".length), 10);
    if (!(runId > (parseInt(panel.dataset.latestRun, 10) || 0))) return;
    // A kind this view does not list (a chat answer on the default view) changes nothing.
    var kinds = panel.dataset.kinds || "all";
    if (kinds !== "all" && kinds.split(",").indexOf(content.dataset.kind) < 0) return;
    if (panel.dataset.livePrepend !== "true") {
      var notice = document.getElementById("runs-new");
      if (notice) notice.hidden = false;
      return;
    }
    var empty = body.querySelector("tr.empty");
    if (empty) empty.remove();
    body.insertBefore(content, body.firstChild);
    htmx.process(content);
    flash(content);
  });

  // An approval opens its dialog wherever it arrives: on load, live, or back with an error.
  htmx.onLoad(function (root) {
    var dialogs = root.matches && root.matches("dialog[data-autoopen]") ? [root] : [];
    if (root.querySelectorAll) {
      dialogs = dialogs.concat(Array.from(root.querySelectorAll("dialog[data-autoopen]")));
    }
    dialogs.forEach(function (dialog) {
      if (!dialog.open && dialog.isConnected) dialog.showModal();
    });
  });

  document.addEventListener("click", function (event) {
    var opener = event.target.closest("[data-open-dialog]");
    if (opener) {
      var dialog = document.getElementById(opener.dataset.openDialog);
      if (dialog && !dialog.open) dialog.showModal();
      return;
    }
    var closer = event.target.closest("[data-close-dialog]");
    if (closer) {
      var own = closer.closest("dialog");
      if (own) own.close();
    }
  });

  function setLiveState(event, state) {
    var indicator = event.target.querySelector && event.target.querySelector(".live-indicator");
    if (indicator) indicator.dataset.state = state;
  }

  document.addEventListener("htmx:wsOpen", function (event) {
    setLiveState(event, "live");
  });
  document.addEventListener("htmx:wsClose", function (event) {
    setLiveState(event, "offline");
  });
  document.addEventListener("htmx:wsError", function (event) {
    setLiveState(event, "offline");
  });
})();
