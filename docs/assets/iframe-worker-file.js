// posenc's docs: run Material's search worker from file:// (posenc's own code, no network).
//
// Material searches in a Web Worker (assets/javascripts/workers/search.*.js). Chromium refuses
// `new Worker(url)` for a page opened from disk (a file:// script is another origin), so there the
// search box would stay empty. On file:// only, this replaces Worker with an object that runs the
// same script in a hidden iframe of this page's origin and carries the messages both ways, each
// asynchronously, as a worker's are. The offline plugin inlines the search index as a script, and
// English search loads no other script (the worker calls importScripts only for other languages).
// The name holds "iframe-worker" so that Material's offline plugin does not add its CDN shim.
(function () {
  "use strict";
  if (location.protocol !== "file:" || typeof EventTarget !== "function") {
    return;
  }

  class FileWorker extends EventTarget {
    constructor(url) {
      super();
      this.onmessage = null;
      this.onerror = null;
      this._pending = [];
      this._loaded = false;
      this._frame = document.createElement("iframe");
      this._frame.hidden = true;
      this._frame.tabIndex = -1;
      this._frame.setAttribute("aria-hidden", "true");
      this._frame.title = "search worker";
      document.body.appendChild(this._frame);
      const inner = this._frame.contentWindow;
      // what the worker's script calls: postMessage answers this page; importScripts is not available
      inner.postMessage = (data) => setTimeout(() => this._emit("message", data), 0);
      inner.importScripts = () => {
        throw new Error("importScripts is not available to a worker run from file://");
      };
      const script = inner.document.createElement("script");
      script.src = new URL(url, location.href).href;
      script.onload = () => {
        this._loaded = true;
        for (const data of this._pending.splice(0)) {
          this._deliver(data);
        }
      };
      script.onerror = () => this._emit("error", null);
      inner.document.head.appendChild(script);
    }

    postMessage(data) {
      if (this._loaded) {
        this._deliver(data);
      } else {
        this._pending.push(data);
      }
    }

    terminate() {
      this._frame.remove();
    }

    _deliver(data) {
      const inner = this._frame.contentWindow;
      setTimeout(() => inner.dispatchEvent(new inner.MessageEvent("message", { data: data })), 0);
    }

    _emit(type, data) {
      const event = type === "message" ? new MessageEvent("message", { data: data }) : new Event("error");
      const handler = type === "message" ? this.onmessage : this.onerror;
      if (typeof handler === "function") {
        handler.call(this, event);
      }
      this.dispatchEvent(event);
    }
  }

  window.Worker = FileWorker;
})();
