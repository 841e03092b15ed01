// The chat page: tabs that switch without a reload (a tab shown once keeps its socket, so every
// answer stays live), and per tab a socket on ws/conversations/<id>/?after=SEQ.
//
// The socket says what changed; the rows themselves are fetched from the server as HTML
// (GET /chat/<id>/entries?after=SEQ), drawn by the templates that drew the page: one renderer.
// Only what exists before it is stored is drawn here: the streamed tokens (as text, never as
// HTML) and the tool calls of the running answer, in the same markup as the stored ones.
(function () {
  "use strict";

  var ARGUMENTS_SHOWN = 80; // conversations.presenters.CALL_ARGUMENTS_CHARS
  var ENDED = ["succeeded", "failed", "cancelled", "idle"];
  var REFRESH_EVENTS = [
    "approval_required",
    "approval_decided",
    "message_steered",
    "error",
    "result",
    "run_status",
  ];

  function seqOf(element) {
    return parseInt(element && element.dataset.seq, 10) || 0;
  }

  function lastSeq(panel) {
    return parseInt(panel.dataset.lastSeq, 10) || 0;
  }

  // Python's json.dumps(value, ensure_ascii=False), which the server's call summary uses, so a
  // live call is cut where the stored one will be.
  function pyJson(value) {
    if (Array.isArray(value)) return "[" + value.map(pyJson).join(", ") + "]";
    if (value && typeof value === "object") {
      return (
        "{" +
        Object.keys(value)
          .map(function (key) {
            return JSON.stringify(key) + ": " + pyJson(value[key]);
          })
          .join(", ") +
        "}"
      );
    }
    return JSON.stringify(value === undefined ? null : value);
  }

  function callSummary(tool, args) {
    var text = typeof args === "string" ? args : pyJson(args || {});
    var points = Array.from(text); // code points, as Python counts
    var full = tool + "(" + text + ")";
    if (points.length <= ARGUMENTS_SHOWN) return [full, full];
    return [tool + "(" + points.slice(0, ARGUMENTS_SHOWN).join("") + "…)", full];
  }

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // --- what the running answer streams ------------------------------------------------------

  function liveBox(panel) {
    return panel.querySelector(".chat-live");
  }

  function clearLive(panel) {
    var box = liveBox(panel);
    box.hidden = true;
    box.replaceChildren();
    delete panel.dataset.liveRun;
  }

  // Tokens go to the last piece of the live box when it is of their kind (reasoning or text),
  // else to a new one: a turn's reasoning, its text, its calls, the next turn's reasoning...
  function addToken(panel, runId, token, reasoning) {
    var box = liveBox(panel);
    if (panel.dataset.liveRun && panel.dataset.liveRun !== String(runId)) clearLive(panel);
    panel.dataset.liveRun = String(runId);
    box.hidden = false;
    var last = box.lastElementChild;
    var kind = reasoning ? "reasoning" : "text";
    if (!last || last.dataset.live !== kind) {
      if (reasoning) {
        last = element("details", "chat-reasoning");
        last.open = true;
        last.appendChild(element("summary", "", "Reasoning"));
        last.appendChild(element("div", "thought-text"));
      } else {
        last = element("div", "chat-answer chat-streamed");
      }
      last.dataset.live = kind;
      box.appendChild(last);
    }
    var target = reasoning ? last.querySelector(".thought-text") : last;
    target.textContent += token;
    follow(panel);
  }

  function addCall(panel, runId, payload) {
    var box = liveBox(panel);
    // The socket sends the running answer's events from its first on every (re)connect.
    var id = CSS.escape(String(payload.tool_call_id));
    if (box.querySelector('[data-live-call="' + id + '"]')) return;
    panel.dataset.liveRun = String(runId);
    box.hidden = false;
    var summary = callSummary(payload.tool || "tool", payload.arguments);
    var details = element("details", "chat-call");
    details.dataset.live = "call";
    details.dataset.liveCall = String(payload.tool_call_id);
    var head = element("summary");
    head.appendChild(element("span", "chat-call-label", "calls"));
    head.appendChild(document.createTextNode(" "));
    head.appendChild(element("code", "chat-call-short", summary[0]));
    details.appendChild(head);
    details.appendChild(element("pre", "chat-call-full", summary[1]));
    var result = element("div", "chat-call-result");
    result.appendChild(element("p", "muted", "Running…"));
    details.appendChild(result);
    box.appendChild(details);
    follow(panel);
  }

  function addResult(panel, payload) {
    var call = panel.querySelector(
      '.chat-live [data-live-call="' + CSS.escape(String(payload.tool_call_id)) + '"]',
    );
    if (!call) return;
    var ok = payload.status === "succeeded";
    var box = element("div", "chat-result");
    box.dataset.ok = ok ? "true" : "false";
    box.appendChild(element("p", "chat-result-head", ok ? "Result" : "Error"));
    var text = ok ? pyJson(payload.result) : (payload.error_code || "") + " " + (payload.error || "");
    box.appendChild(element("pre", "chat-result-text", text.trim()));
    call.querySelector(".chat-call-result").replaceChildren(box);
  }

  // --- the rows, fetched as HTML ------------------------------------------------------------

  function follow(panel) {
    if (panel.dataset.following === "false") return;
    var rows = panel.querySelector(".chat-rows");
    rows.scrollTop = rows.scrollHeight;
    if (panel.hidden) return;
    var input = panel.querySelector(".chat-input");
    if (input && input.getBoundingClientRect().bottom > window.innerHeight) {
      input.scrollIntoView({ block: "end" });
    }
  }

  function setRunning(panel, runId) {
    runId = runId ? String(runId) : "";
    panel.dataset.running = runId;
    var stop = panel.querySelector(".chat-stop button");
    if (stop) stop.disabled = !runId;
    var state = panel.querySelector(".chat-answer-state");
    if (state) state.textContent = runId ? "Answering…" : "";
    var tab = document.querySelector('.chat-tab[data-conversation="' + panel.dataset.conversation + '"]');
    if (tab) tab.dataset.running = runId ? "true" : "false";
  }

  // A conversation is named after its first message: the tab and the heading follow.
  function retitle(panel, title) {
    if (!title || panel.getAttribute("aria-label") === title) return;
    panel.setAttribute("aria-label", title);
    var heading = panel.querySelector(".chat-title");
    if (heading && heading.firstChild) heading.firstChild.textContent = title + " ";
    var tab = document.querySelector(
      '.chat-tab[data-conversation="' + panel.dataset.conversation + '"] .chat-tab-title',
    );
    if (tab) tab.textContent = Array.from(title).length > 32 ? Array.from(title).slice(0, 31).join("") + "…" : title;
    if (!panel.hidden) document.title = title + " · Chat · AgentDesk";
  }

  function placeEnd(panel, end) {
    var rows = panel.querySelector(".chat-rows");
    var mine = rows.querySelectorAll('li[data-run="' + CSS.escape(end.dataset.run) + '"]');
    var after = mine.length ? mine[mine.length - 1] : null;
    if (after) after.after(end);
    else rows.appendChild(end);
  }

  function replaceRegion(panel, update, selector, key) {
    var current = panel.querySelector(selector);
    var incoming = update.querySelector(selector);
    if (!current || !incoming) return;
    var ids = function (region) {
      return Array.from(region.querySelectorAll("[" + key + "]"))
        .map(function (node) {
          return node.getAttribute(key) + ":" + node.textContent.length;
        })
        .join(",");
    };
    if (ids(current) === ids(incoming)) return;
    current.replaceWith(incoming);
    htmx.process(incoming);
  }

  function merge(panel, html) {
    var template = document.createElement("template");
    template.innerHTML = html;
    var update = template.content.querySelector(".chat-update");
    if (!update) return;
    var rows = panel.querySelector(".chat-rows");
    var last = lastSeq(panel);
    var added = false;
    var liveRun = panel.dataset.liveRun;
    var answered = false;
    update.querySelectorAll(".chat-rows > li").forEach(function (row) {
      if (seqOf(row) <= last || document.getElementById(row.id)) return;
      added = true;
      if (liveRun && row.dataset.run === liveRun && row.dataset.kind !== "user") answered = true;
      var callId = row.dataset.resultFor;
      if (callId) {
        var slot = rows.querySelector(
          'details.chat-call[data-call-id="' + CSS.escape(callId) + '"] .chat-call-result',
        );
        if (slot) {
          slot.replaceChildren.apply(slot, Array.from(row.children));
          return;
        }
      }
      rows.appendChild(row);
    });
    panel.dataset.lastSeq = String(Math.max(last, parseInt(update.dataset.lastSeq, 10) || 0));
    update.querySelectorAll(".chat-ends > li").forEach(function (end) {
      if (!document.getElementById(end.id)) placeEnd(panel, end);
    });
    replaceRegion(panel, update, ".chat-approvals", "data-approval-id");
    replaceRegion(panel, update, ".chat-waiting", "data-waiting");
    setRunning(panel, update.dataset.running);
    retitle(panel, update.dataset.title);
    var usage = update.querySelector(".chat-context");
    var shown = panel.querySelector(".chat-context");
    if (usage && shown) shown.textContent = usage.textContent;
    // What was streamed is now stored (and drawn from the rows): the live copy goes.
    if (answered || (liveRun && update.dataset.running !== liveRun)) clearLive(panel);
    if (added) follow(panel);
  }

  function refresh(panel) {
    window.AgentDeskLive.fetchNew(
      panel,
      function () {
        return panel.dataset.entriesUrl + "?after=" + lastSeq(panel);
      },
      merge,
    );
  }

  // --- the socket ---------------------------------------------------------------------------

  function onMessage(panel, message) {
    switch (message.type) {
      case "entry":
      case "waiting":
        refresh(panel);
        break;
      case "answer":
        // {run_id: N, status} while it runs and once as it ends; {run_id: null} when idle.
        var running = message.run_id && ENDED.indexOf(message.status) === -1;
        setRunning(panel, running ? message.run_id : "");
        refresh(panel);
        break;
      case "token":
        addToken(panel, message.run_id, message.token || "", !!message.reasoning);
        break;
      case "run_event":
        var event = message.event || {};
        if (event.type === "tool_call") addCall(panel, message.run_id, event.payload || {});
        else if (event.type === "tool_result") addResult(panel, event.payload || {});
        if (REFRESH_EVENTS.indexOf(event.type) !== -1) refresh(panel);
        break;
    }
  }

  function connect(panel) {
    window.AgentDeskLive.connect(
      panel,
      function () {
        return panel.dataset.socket + "?after=" + lastSeq(panel);
      },
      function () {
        refresh(panel); // whatever happened while it was away
      },
      function (message) {
        onMessage(panel, message);
      },
    );
  }

  function start(panel) {
    if (panel._started) return;
    panel._started = true;
    var rows = panel.querySelector(".chat-rows");
    rows.addEventListener("scroll", function () {
      panel.dataset.following = String(rows.scrollHeight - rows.scrollTop - rows.clientHeight < 40);
    });
    follow(panel);
    connect(panel);
  }

  // --- tabs ---------------------------------------------------------------------------------

  function panelFor(id) {
    return document.getElementById("chat-panel-" + id);
  }

  function show(id) {
    document.querySelectorAll(".chat-panel").forEach(function (panel) {
      panel.hidden = panel.dataset.conversation !== String(id);
    });
    document.querySelectorAll(".chat-tab").forEach(function (tab) {
      var active = tab.dataset.conversation === String(id);
      tab.toggleAttribute("data-active", active);
      var link = tab.querySelector(".chat-tab-link");
      if (active) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    });
    var panel = panelFor(id);
    if (panel) {
      document.title = panel.getAttribute("aria-label") + " · Chat · AgentDesk";
      follow(panel);
    }
  }

  function open(id, href, push) {
    var existing = panelFor(id);
    if (existing) {
      show(id);
      if (push) history.pushState({ chat: id }, "", href);
      return;
    }
    fetch(href + "?panel=1", { credentials: "same-origin", headers: { "HX-Request": "true" } })
      .then(function (response) {
        if (response.redirected || !response.ok) throw new Error("HTTP " + response.status);
        return response.text();
      })
      .then(function (html) {
        var template = document.createElement("template");
        template.innerHTML = html.trim();
        var panel = template.content.querySelector(".chat-panel");
        if (!panel) throw new Error("no panel");
        if (!panelFor(id)) {
          var empty = document.querySelector(".chat-empty");
          if (empty) empty.remove();
          document.getElementById("chat-panels").appendChild(panel);
          htmx.process(panel);
          start(panel);
        }
        show(id);
        if (push) history.pushState({ chat: id }, "", href);
      })
      .catch(function () {
        window.location.assign(href); // the page itself says what went wrong
      });
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest(".chat-tab-link");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    // An agent's tab, or any tab while an agent's is shown, is a page of its own (agent.js).
    if (!link.closest(".chat-tab").dataset.conversation || !document.querySelector(".chat-panel")) return;
    event.preventDefault();
    open(link.closest(".chat-tab").dataset.conversation, link.getAttribute("href"), true);
  });

  window.addEventListener("popstate", function () {
    var match = window.location.pathname.match(/\/chat\/(\d+)\/$/);
    if (match && document.querySelector('.chat-tab[data-conversation="' + match[1] + '"]')) {
      open(match[1], window.location.pathname, false);
    }
  });

  // --- the input ----------------------------------------------------------------------------

  // Enter sends, Shift+Enter is a new line (and nothing is sent while an IME composes).
  document.addEventListener("keydown", function (event) {
    var box = event.target;
    if (!box.matches || !box.matches(".chat-composer textarea")) return;
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
    event.preventDefault();
    box.form.requestSubmit();
  });

  // A send, a stop or a decision changes the rows: fetched now rather than on the socket's
  // word alone, so the tab is right even while its socket reconnects. The form that asked may
  // be swapped out by then: its tab is noted before the request.
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    var panel = elt && elt.closest && elt.closest(".chat-panel");
    if (panel) event.detail.xhr._chatPanel = panel;
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    var panel = event.detail.xhr && event.detail.xhr._chatPanel;
    if (!panel) return;
    refresh(panel);
    var composer = event.detail.elt;
    if (event.detail.successful && composer.matches && composer.matches(".chat-composer")) {
      panel.dataset.following = "true";
      window.setTimeout(function () {
        var box = panel.querySelector(".chat-composer textarea");
        if (box) box.focus();
      }, 0);
    }
  });

  // A contract agent's tab (agent.js) draws its attempt's stream, tokens, reasoning and the
  // calls in flight, with these: the same live box and markup as a chat answer's.
  window.AgentDeskStream = {
    addToken: addToken,
    addCall: addCall,
    addResult: addResult,
    clear: clearLive,
  };

  function init() {
    document.querySelectorAll(".chat-panel").forEach(start);
    var active = document.querySelector(".chat-panel");
    if (active) history.replaceState({ chat: active.dataset.conversation }, "", window.location.href);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
