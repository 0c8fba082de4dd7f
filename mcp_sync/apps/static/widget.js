// The notebook front end of one MCP App view (mcp_sync.apps.widget, an anywidget). A notebook has no second
// origin to serve a sandbox from, so the sandbox proxy is a srcdoc frame sandboxed WITHOUT allow-same-origin:
// an opaque origin, from which nothing of the notebook page is reachable. The proxy gets the app's HTML in
// ui/notifications/sandbox-resource-ready (its CSP already in a meta tag, built by the kernel from the origins
// the resource declares) and shows it in a frame of its own, as sandboxed. JSON-RPC is relayed between the app
// and the kernel (model.send, msg:custom); messages are taken only from the proxy's window, and the proxy takes
// them only from its parent (on the notebook's origin) and from its app frame.

// One live view per widget model in a page: a second view of the same output (a cell's output shown twice)
// would be a second app answering the same messages, so it only says where the app is.
const live = new WeakMap();

function proxyDocument(hostOrigin) {
  const config = JSON.stringify({ hostOrigin }).replace(/</g, "\\u003c");
  return `<!doctype html><html><head><meta charset="utf-8">
<style>html, body { margin: 0; height: 100%; overflow: hidden; } iframe { border: 0; width: 100%; height: 100%; }
</style></head><body><script>
"use strict";
(() => {
  const config = ${config};
  // A notebook page on an opaque origin itself (some hosts sandbox their outputs) has no name to post to.
  const parentTarget = config.hostOrigin === "null" ? "*" : config.hostOrigin;
  let app = null;
  const reserved = (message) => typeof message.method === "string"
    && message.method.startsWith("ui/notifications/sandbox-");
  window.addEventListener("message", (event) => {
    const message = event.data;
    if (!event.isTrusted || message === null || typeof message !== "object" || message.jsonrpc !== "2.0") return;
    if (event.source === window.parent && event.origin === config.hostOrigin) {
      if (message.method === "ui/notifications/sandbox-resource-ready") {
        if (app !== null) return;  // one app per proxy
        app = document.createElement("iframe");
        app.sandbox = "allow-scripts allow-forms";
        if (message.params.allow) app.allow = message.params.allow;
        app.srcdoc = message.params.html;
        document.body.appendChild(app);
      } else if (!reserved(message) && app !== null && app.contentWindow !== null) {
        app.contentWindow.postMessage(message, "*");  // an opaque origin has no name to post to
      }
    } else if (app !== null && event.source === app.contentWindow) {
      if (!reserved(message)) window.parent.postMessage(message, parentTarget);
    }
  });
  window.parent.postMessage({ jsonrpc: "2.0", method: "ui/notifications/sandbox-proxy-ready", params: {} },
                            parentTarget);
})();
<\/script></body></html>`;
}

function render({ model, el }) {
  if (live.has(model)) {
    el.textContent = "This app is shown in another view of this output.";
    return undefined;
  }
  const frame = document.createElement("iframe");
  live.set(model, frame);
  frame.className = "mcp-sync-app";
  frame.title = model.get("title");
  frame.sandbox = "allow-scripts";
  if (model.get("allow")) frame.allow = model.get("allow");
  frame.style.cssText = "width: 100%; height: 320px; display: block; background: #fff; "
    + (model.get("border") ? "border: 1px solid #ccc; border-radius: 6px;" : "border: 0;");

  function toProxy(message) {
    if (frame.contentWindow !== null) frame.contentWindow.postMessage(message, "*");  // opaque: no name
  }

  // The listener first, then the frame: the proxy's sandbox-proxy-ready cannot come before anyone listens.
  function onMessage(event) {
    if (!event.isTrusted || event.source !== frame.contentWindow || event.origin !== "null") return;
    const message = event.data;
    if (message === null || typeof message !== "object" || message.jsonrpc !== "2.0") return;
    if (message.method === "ui/notifications/sandbox-proxy-ready") {
      toProxy({ jsonrpc: "2.0", method: "ui/notifications/sandbox-resource-ready",
                params: { html: model.get("html"), allow: model.get("allow") } });
      return;
    }
    if (typeof message.method === "string" && message.method.startsWith("ui/notifications/sandbox-")) return;
    if (message.method === "ui/notifications/size-changed" && message.params) {
      const { height } = message.params;
      if (typeof height === "number" && height >= 0) frame.style.height = `${Math.ceil(height)}px`;
    }
    model.send({ app: message });
  }

  function onCustom(content) {
    if (content === null || typeof content !== "object") return;
    if ("app" in content) toProxy(content.app);
    else if (typeof content.open === "string") window.open(content.open, "_blank", "noopener,noreferrer");
  }

  window.addEventListener("message", onMessage);
  model.on("msg:custom", onCustom);
  const dark = document.body.dataset.jpThemeLight === "false"
    || (window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches);
  model.send({
    context: {
      theme: dark ? "dark" : "light",
      locale: navigator.language,
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      userAgent: navigator.userAgent,
      containerDimensions: { width: el.clientWidth || 600, maxHeight: 4000 },
    },
  });
  frame.srcdoc = proxyDocument(window.location.origin);
  el.appendChild(frame);
  return () => {
    window.removeEventListener("message", onMessage);
    model.off("msg:custom", onCustom);
    frame.remove();
    if (live.get(model) === frame) live.delete(model);
  };
}

export default { render };
