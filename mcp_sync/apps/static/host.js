// The host page of one MCP App view (mcp_sync.apps.web). It holds the sandbox proxy frame, on another origin,
// and carries JSON-RPC between that frame and the Python bridge: POST send for each message from the app,
// a long-polled POST poll for what goes to it. Messages are taken only from the proxy frame's window, on the
// sandbox origin; they are posted only to that window, on that origin.
"use strict";
(() => {
  const config = JSON.parse(document.getElementById("mcp-app-config").textContent);
  const status = document.getElementById("status");
  const holder = document.getElementById("frame");
  let frame = null;
  let open = true;

  function say(text) { status.textContent = text; }

  async function post(url, body) {
    const response = await fetch(url, {
      method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body),
      credentials: "omit", cache: "no-store",
    });
    if (!response.ok) throw new Error(`${url.split("?")[0]}: ${response.status}`);
    return response.status === 204 ? null : response.json();
  }

  function toApp(message) {
    if (frame !== null && frame.contentWindow !== null) frame.contentWindow.postMessage(message, config.sandboxOrigin);
  }

  function end(reason) {
    if (!open) return;
    open = false;
    if (frame !== null) { frame.remove(); frame = null; }
    say(`closed: ${reason}`);
    document.body.dataset.closed = reason;
  }

  // The listener first, then the frame: the proxy's sandbox-proxy-ready cannot come before anyone listens.
  window.addEventListener("message", (event) => {
    if (!event.isTrusted || frame === null || event.source !== frame.contentWindow) return;
    if (event.origin !== config.sandboxOrigin) return;
    const message = event.data;
    if (message === null || typeof message !== "object" || message.jsonrpc !== "2.0") return;
    if (message.method === "ui/notifications/sandbox-proxy-ready") {
      // The app's HTML is served by the sandbox origin with its CSP; the proxy is told what it is granted.
      toApp({jsonrpc: "2.0", method: "ui/notifications/sandbox-resource-ready",
             params: {csp: config.csp, permissions: Object.fromEntries(config.permissions.map((p) => [p, {}]))}});
      say("running");
      return;
    }
    if (typeof message.method === "string" && message.method.startsWith("ui/notifications/sandbox-")) return;
    if (message.method === "ui/notifications/size-changed" && message.params) {
      const {height} = message.params;
      if (typeof height === "number" && height >= 0) frame.style.height = `${Math.ceil(height)}px`;
    }
    post(config.send, message).catch((error) => say(`the host is gone (${error.message})`));
  });

  async function poll() {
    while (open) {
      let items;
      try {
        items = await post(config.poll, {});
      } catch (error) {
        end(`the host is gone (${error.message})`);
        return;
      }
      for (const item of items) {
        if ("app" in item) toApp(item.app);
        else if ("open" in item) window.open(item.open, "_blank", "noopener,noreferrer");
        else if ("closed" in item) end(item.closed);
      }
    }
  }

  window.addEventListener("pagehide", () => {
    if (open) navigator.sendBeacon(config.close, new Blob(["{}"], {type: "application/json"}));
  });

  (async () => {
    const dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
    const width = holder.clientWidth;
    await post(config.hello, {
      theme: dark ? "dark" : "light",
      locale: navigator.language,
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      userAgent: navigator.userAgent,
      containerDimensions: {width, maxHeight: 4000},
    });
    frame = document.createElement("iframe");
    frame.sandbox = "allow-scripts allow-same-origin allow-forms";
    if (config.allow) frame.allow = config.allow;
    if (config.border) frame.className = "border";
    frame.title = document.title;
    frame.src = config.proxy;
    holder.appendChild(frame);
    poll();
  })().catch((error) => say(`failed: ${error.message}`));
})();
