// The browser page of `pitrio serve` (docs/host-protocol.md): list, create and open sessions,
// watch them stream and drive them. Plain JavaScript, no build step, no external URLs.
//
// Model and tool output only ever reaches the page through textContent, never innerHTML.
// The view of the open session is rebuilt from pi's event objects: an assistant message is
// rendered from the partial `message` that every `message_update` carries (not by appending
// deltas), so an event seen twice cannot double text; events are also filtered by `seq`.
"use strict";

(() => {
  const BACKOFF_MIN_MS = 250;
  const BACKOFF_MAX_MS = 5000;

  const $ = (id) => document.getElementById(id);
  const ui = {
    status: $("status"), sessions: $("session-list"), newSession: $("new-session"),
    title: $("chat-title"), log: $("log"), queue: $("queue"), form: $("composer"),
    input: $("input"), send: $("send"), followUp: $("follow-up"), abort: $("abort"),
  };

  const hash = new URLSearchParams(location.hash.slice(1));
  const state = {
    token: hash.get("token") || "",
    ws: null,
    connected: false,
    connections: 0, // sockets opened so far (the first one and every reconnect)
    attempt: 0, // reconnect attempts since the last successful connection
    retryTimer: null,
    nextId: 1,
    pending: new Map(), // command id -> {resolve, reject}
    seq: new Map(), // session id -> last seq received
    epoch: new Map(), // session id -> the epoch of that seq (the host's opening of the session)
    sessions: [],
    current: hash.get("session") || null,
    streaming: false,
    notice: "",
    held: null, // events held back while a freshly opened session's history loads
    messages: [], // the open session's view: {message, el, open}
    tools: new Map(), // toolCallId -> {name, args, partial, result, isError, done, card}
  };

  // ---- elements --------------------------------------------------------------------------

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function contentText(content) {
    if (typeof content === "string") return content;
    if (!Array.isArray(content)) return "";
    return content
      .map((b) => (b.type === "text" ? b.text : b.type === "image" ? "[image]" : ""))
      .join("\n");
  }

  function json(value) {
    try {
      return JSON.stringify(value, null, 2);
    } catch {
      return String(value);
    }
  }

  // ---- status ------------------------------------------------------------------------------

  function renderStatus() {
    let text = state.connected ? "connected" : state.retryTimer ? "reconnecting" : "connecting";
    if (!state.token) text = "no token: open the address that pitrio serve printed (#token=...)";
    if (state.connected && state.streaming) text += " · streaming";
    if (state.notice) text += " · " + state.notice;
    ui.status.textContent = text;
    ui.status.dataset.state = state.connected ? (state.streaming ? "streaming" : "connected") : "reconnecting";
    const open = state.connected && state.current !== null;
    ui.input.disabled = !open;
    ui.send.disabled = !open;
    ui.send.textContent = state.streaming ? "Steer" : "Send";
    ui.followUp.disabled = !open || !state.streaming;
    ui.abort.disabled = !open || !state.streaming;
    ui.newSession.disabled = !state.connected;
  }

  function notice(text) {
    state.notice = text;
    renderStatus();
  }

  // ---- the session list --------------------------------------------------------------------

  function renderSessions() {
    ui.sessions.replaceChildren();
    for (const s of state.sessions) {
      const item = el("li");
      const button = el("button", "session", s.name || s.session);
      button.type = "button";
      button.title = s.sessionFile || s.session;
      if (s.session === state.current) button.setAttribute("aria-current", "true");
      if (s.isStreaming) button.append(el("span", "badge", "streaming"));
      button.addEventListener("click", () => openSession(s.session));
      item.append(button);
      ui.sessions.append(item);
    }
  }

  async function refreshSessions() {
    const data = await command({ type: "list_sessions" });
    state.sessions = data.sessions || [];
    renderSessions();
  }

  // ---- the chat view -----------------------------------------------------------------------

  function nearBottom() {
    return ui.log.scrollHeight - ui.log.scrollTop - ui.log.clientHeight < 40;
  }

  function tool(id) {
    let t = state.tools.get(id);
    if (!t) {
      const card = el("section", "tool");
      card.dataset.toolCallId = id;
      card.append(el("h3", "tool-name"), el("pre", "tool-args"), el("pre", "tool-result"));
      t = { name: "", args: undefined, partial: null, result: null, isError: false, done: false, card };
      state.tools.set(id, t);
    }
    return t;
  }

  function renderTool(t) {
    const [name, args, result] = t.card.children;
    const status = t.done ? (t.isError ? "error" : "done") : t.partial || t.args !== undefined ? "running" : "";
    name.textContent = status ? `${t.name} (${status})` : t.name;
    t.card.dataset.status = status || "called";
    args.textContent = t.args === undefined ? "" : json(t.args);
    const shown = t.result || t.partial;
    result.textContent = shown ? contentText(shown.content) : "";
    result.hidden = !shown;
  }

  function renderBlock(node, block) {
    if (block.type === "text") {
      node.textContent = block.text;
    } else if (block.type === "thinking") {
      node.lastChild.textContent = block.thinking;
    } else if (block.type === "toolCall") {
      const t = tool(block.id);
      t.name = block.name;
      if (t.args === undefined || !t.done) t.args = block.arguments;
      if (t.card.parentNode !== node) node.replaceChildren(t.card);
      renderTool(t);
    } else if (block.type === "image") {
      node.textContent = "[image]";
    }
  }

  function newBlock(block) {
    if (block.type === "thinking") {
      const details = el("details", "thinking"); // collapsed until the reader opens it
      details.append(el("summary", "", "Thinking"), el("pre"));
      return details;
    }
    return el("div", "block-" + block.type);
  }

  function renderAssistant(vm) {
    const content = Array.isArray(vm.message.content) ? vm.message.content : [];
    const body = vm.el.querySelector(".body");
    content.forEach((block, i) => {
      let node = body.children[i];
      if (!node || node.dataset.type !== block.type) {
        const fresh = newBlock(block);
        fresh.dataset.type = block.type;
        if (node) body.replaceChild(fresh, node);
        else body.append(fresh);
        node = fresh;
      }
      renderBlock(node, block);
    });
    while (body.children.length > content.length) body.lastChild.remove();
    const error = vm.el.querySelector(".error");
    const failed = vm.message.stopReason === "error" || vm.message.stopReason === "aborted";
    error.textContent = failed ? vm.message.errorMessage || vm.message.stopReason : "";
    error.hidden = !failed;
  }

  function renderMessage(vm) {
    const m = vm.message;
    if (m.role === "assistant") renderAssistant(vm);
    else if (m.role === "user") vm.el.querySelector(".body").textContent = contentText(m.content);
    else if (m.role === "bashExecution")
      vm.el.querySelector(".body").textContent = `$ ${m.command}\n${m.output || ""}`;
    else if (m.role === "toolResult") {
      const t = tool(m.toolCallId);
      t.name = t.name || m.toolName;
      t.result = { content: m.content };
      t.isError = !!m.isError;
      t.done = true;
      renderTool(t);
      // A result whose call is not on the page (rare: a partial snapshot) is shown on its own.
      if (!t.card.isConnected) vm.el.append(t.card);
    } else {
      vm.el.querySelector(".body").textContent = m.summary || contentText(m.content);
    }
    vm.el.classList.toggle("open", vm.open);
  }

  function sameMessage(a, b) {
    if (a.role !== b.role || a.timestamp === undefined || a.timestamp !== b.timestamp) return false;
    if (a.role === "toolResult") return a.toolCallId === b.toolCallId;
    return a.role !== "user" || contentText(a.content) === contentText(b.content);
  }

  // Add `message` to the view, or replace the last entry when it is the same message (the one
  // that is streaming, or a copy already shown by a snapshot).
  function showMessage(message, open) {
    const last = state.messages[state.messages.length - 1];
    const stick = nearBottom();
    let vm;
    if (last && (last.open ? last.message.role === message.role : sameMessage(last.message, message))) {
      vm = last;
    } else {
      const node = el("article", "msg " + message.role);
      node.dataset.role = message.role;
      if (message.role !== "toolResult") {
        node.append(el("h3", "who", message.role === "assistant" ? "Assistant" : message.role === "user" ? "You" : message.role));
        node.append(el("div", "body"), el("p", "error"));
      }
      vm = { message, el: node, open };
      state.messages.push(vm);
      ui.log.append(node);
    }
    vm.message = message;
    vm.open = open;
    renderMessage(vm);
    if (stick) ui.log.scrollTop = ui.log.scrollHeight;
  }

  function clearView(title) {
    state.messages = [];
    state.tools.clear();
    ui.log.replaceChildren();
    ui.queue.hidden = true;
    ui.title.textContent = title;
  }

  function rebuild(messages) {
    clearView(ui.title.textContent);
    for (const m of messages) showMessage(m, false);
  }

  // ---- events ------------------------------------------------------------------------------

  function applyEvent(e) {
    switch (e.type) {
      case "agent_start":
        state.streaming = true;
        break;
      case "agent_end":
        state.streaming = false;
        break;
      case "message_start":
        showMessage(e.message, true);
        break;
      case "message_update":
        showMessage(e.message, true);
        break;
      case "message_end":
        showMessage(e.message, false);
        break;
      case "tool_execution_start":
      case "tool_execution_update":
      case "tool_execution_end": {
        const t = tool(e.toolCallId);
        t.name = e.toolName;
        if (e.args !== undefined) t.args = e.args;
        if (e.type === "tool_execution_update") t.partial = e.partialResult;
        if (e.type === "tool_execution_end") Object.assign(t, { result: e.result, isError: !!e.isError, done: true });
        if (!t.card.isConnected) ui.log.append(t.card);
        renderTool(t);
        break;
      }
      case "queue_update": {
        const parts = [];
        if (e.steering && e.steering.length) parts.push(`steering: ${e.steering.join(" | ")}`);
        if (e.followUp && e.followUp.length) parts.push(`follow-up: ${e.followUp.join(" | ")}`);
        ui.queue.textContent = "Queued " + parts.join("; ");
        ui.queue.hidden = parts.length === 0;
        break;
      }
      case "compaction_start":
        notice("compacting");
        break;
      case "auto_retry_start":
        notice(`retrying (${e.attempt}/${e.maxAttempts}): ${e.errorMessage || ""}`);
        break;
      case "compaction_end":
      case "auto_retry_end":
        notice("");
        break;
      default:
        break;
    }
    renderStatus();
  }

  function onFrame(f) {
    if (f.type === "response") {
      const waiter = state.pending.get(f.id);
      if (waiter) {
        state.pending.delete(f.id);
        if (f.success) waiter.resolve(f.data || {});
        else waiter.reject(new Error(f.error || `${f.command} failed`));
      } else if (!f.success) {
        notice(`${f.command}: ${f.error}`);
      }
      return;
    }
    if (f.type === "lagged") {
      // The host closes the socket next; the reconnect resumes from our cursor.
      notice("fell behind, resuming");
      return;
    }
    if (!f.session) return;
    if (f.type === "session_closed") {
      state.seq.delete(f.session);
      if (f.session === state.current) {
        state.current = null;
        state.streaming = false;
        notice("session closed");
      }
      refreshSessions().catch(() => {});
      return;
    }
    if (f.type === "snapshot") {
      state.seq.set(f.session, f.seq);
      state.epoch.set(f.session, f.epoch);
      if (f.session === state.current) {
        rebuild(f.messages || []);
        state.streaming = !!(f.state && f.state.isStreaming);
        renderStatus();
      }
      return;
    }
    if (typeof f.seq === "number") {
      // Already seen (a replay overlap); seqs count afresh in each epoch.
      if (f.epoch === state.epoch.get(f.session) && f.seq <= (state.seq.get(f.session) || 0)) return;
      state.seq.set(f.session, f.seq);
      state.epoch.set(f.session, f.epoch);
    }
    if (f.session === state.current) {
      if (state.held) state.held.push(f);
      else applyEvent(f);
    }
    if (f.type === "agent_start" || f.type === "agent_end") refreshSessions().catch(() => {});
  }

  // ---- commands ----------------------------------------------------------------------------

  function command(cmd) {
    return new Promise((resolve, reject) => {
      if (!state.ws || state.ws.readyState !== WebSocket.OPEN) {
        reject(new Error("not connected"));
        return;
      }
      const id = "c" + state.nextId++;
      state.pending.set(id, { resolve, reject });
      state.ws.send(JSON.stringify({ ...cmd, id }));
    });
  }

  function report(promise) {
    promise.catch((err) => notice(err.message));
  }

  function setHashSession(id) {
    const params = new URLSearchParams(location.hash.slice(1));
    if (id) params.set("session", id);
    else params.delete("session");
    history.replaceState(null, "", "#" + params.toString());
  }

  function select(id) {
    state.current = id;
    state.streaming = false;
    setHashSession(id);
    clearView(id);
    renderSessions();
    renderStatus();
  }

  // Attach to `id`. After a reconnect the host sends what came after our cursor (or a
  // snapshot). Opened afresh, the view is built from the session's messages (its file's
  // history included); the events that arrive meanwhile are held back and applied on top,
  // where they replace what they repeat (showMessage), so nothing is lost or doubled.
  async function attach(id) {
    if (state.seq.has(id)) {
      const cursor = { resume_from: state.seq.get(id), epoch: state.epoch.get(id) };
      await command({ type: "open_session", session: id, ...cursor });
      return;
    }
    state.held = [];
    try {
      const data = await command({ type: "open_session", session: id });
      state.seq.set(id, data.seq);
      state.epoch.set(id, data.epoch);
      const [history, status] = await Promise.all([
        command({ type: "get_messages", session: id }),
        command({ type: "get_state", session: id }),
      ]);
      if (id !== state.current) return;
      rebuild(history.messages || []);
      state.streaming = !!status.isStreaming;
      for (const event of state.held) applyEvent(event);
    } catch (err) {
      state.seq.delete(id); // the view is incomplete: open afresh after a reconnect
      throw err;
    } finally {
      state.held = null;
      renderStatus();
    }
  }

  async function openSession(id) {
    if (id === state.current && state.messages.length) return;
    const previous = state.current;
    if (previous && state.connected) command({ type: "detach_session", session: previous }).catch(() => {});
    if (previous) state.seq.delete(previous);
    state.seq.delete(id);
    select(id);
    await attach(id);
  }

  async function createSession() {
    const data = await command({ type: "create_session" });
    if (state.current && state.current !== data.session) {
      command({ type: "detach_session", session: state.current }).catch(() => {});
    }
    state.seq.set(data.session, data.seq || 0);
    state.epoch.set(data.session, data.epoch);
    select(data.session);
    await refreshSessions();
  }

  function submit(kind) {
    const text = ui.input.value;
    if (!text.trim() || !state.current) return;
    const type = kind || (state.streaming ? "steer" : "prompt");
    ui.input.value = "";
    report(command({ type, session: state.current, message: text }));
  }

  // ---- the connection ----------------------------------------------------------------------

  function connect() {
    state.retryTimer = null;
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const ws = new WebSocket(`${scheme}://${location.host}/ws?token=${encodeURIComponent(state.token)}`);
    state.ws = ws;
    ws.addEventListener("open", () => {
      state.connected = true;
      state.connections += 1;
      state.attempt = 0;
      notice("");
      report(refreshSessions());
      if (state.current) report(attach(state.current));
    });
    ws.addEventListener("message", (msg) => {
      let frame;
      try {
        frame = JSON.parse(msg.data);
      } catch {
        return;
      }
      onFrame(frame);
    });
    ws.addEventListener("close", () => {
      if (state.ws !== ws) return;
      state.ws = null;
      state.connected = false;
      for (const waiter of state.pending.values()) waiter.reject(new Error("connection lost"));
      state.pending.clear();
      const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** state.attempt);
      state.attempt += 1;
      state.retryTimer = setTimeout(connect, delay * (0.75 + Math.random() / 2));
      renderStatus();
    });
  }

  ui.newSession.addEventListener("click", () => report(createSession()));
  ui.form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit();
  });
  ui.input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit();
    }
  });
  ui.followUp.addEventListener("click", () => submit("follow_up"));
  ui.abort.addEventListener("click", () => report(command({ type: "abort", session: state.current })));

  // A small hook for tests and debugging: drop the socket as a network failure would.
  window.pitrio = {
    state,
    dropSocket() {
      if (state.ws) state.ws.close(4000, "dropped by the page");
    },
  };

  if (state.current) clearView(state.current);
  renderStatus();
  if (state.token) connect();
})();
