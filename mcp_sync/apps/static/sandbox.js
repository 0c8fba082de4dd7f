// The sandbox proxy of one MCP App view (mcp_sync.apps.web), on the sandbox origin. It tells the host page it
// is ready, loads the app by URL from its own origin when the page says so (the app's CSP comes in that
// response's header), and relays JSON-RPC between the page and the app, except the proxy's own
// ui/notifications/sandbox-* messages. It takes messages only from its parent on the page's origin and from
// the app's frame; it creates no message of its own but sandbox-proxy-ready.
"use strict";
(() => {
  const config = JSON.parse(document.getElementById("mcp-sandbox-config").textContent);
  const FEATURES = {camera: "camera", microphone: "microphone", geolocation: "geolocation",
                    clipboardWrite: "clipboard-write"};
  let app = null;

  function reserved(message) {
    return typeof message.method === "string" && message.method.startsWith("ui/notifications/sandbox-");
  }

  window.addEventListener("message", (event) => {
    const message = event.data;
    if (!event.isTrusted || message === null || typeof message !== "object" || message.jsonrpc !== "2.0") return;
    if (event.source === window.parent && event.origin === config.hostOrigin) {
      if (message.method === "ui/notifications/sandbox-resource-ready") {
        if (app !== null) return;  // one app per proxy
        const granted = Object.keys((message.params && message.params.permissions) || {});
        app = document.createElement("iframe");
        app.sandbox = "allow-scripts allow-same-origin allow-forms";
        const allow = granted.filter((name) => name in FEATURES).map((name) => FEATURES[name]);
        if (allow.length) app.allow = allow.join("; ");
        app.src = config.app;
        document.body.appendChild(app);
      } else if (!reserved(message) && app !== null && app.contentWindow !== null) {
        app.contentWindow.postMessage(message, window.location.origin);
      }
    } else if (app !== null && event.source === app.contentWindow && event.origin === window.location.origin) {
      if (!reserved(message)) window.parent.postMessage(message, config.hostOrigin);
    }
  });
  window.parent.postMessage({jsonrpc: "2.0", method: "ui/notifications/sandbox-proxy-ready", params: {}},
                            config.hostOrigin);
})();
