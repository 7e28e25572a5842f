// A Server-Sent Events reader over fetch: EventSource cannot send an
// Authorization header, so the stream is read from a fetch body and parsed
// here. It reconnects by itself (after the server's `retry:`, backing off to
// 10 s while the service is away), resuming with Last-Event-ID, so that no
// message is lost or repeated across a reconnect.

import { ApiError, headers, url } from "./api.js";

export function follow(path, { query = {}, lastEventId = null, onMessage, onStatus = () => {} }) {
  const controller = new AbortController();
  let lastId = lastEventId;
  let retry = 1000;
  let failures = 0;
  let stopped = false;

  async function readOnce() {
    const extra = { Accept: "text/event-stream" };
    if (lastId !== null && lastId !== undefined && lastId !== "") extra["Last-Event-ID"] = String(lastId);
    const response = await fetch(url(path, query), {
      headers: headers(extra),
      signal: controller.signal,
      cache: "no-store",
    });
    if (!response.ok) {
      let problem = null;
      try {
        problem = await response.json();
      } catch {
        problem = null;
      }
      throw new ApiError(response.status, problem);
    }
    onStatus("live");
    failures = 0;
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    let message = { event: "message", data: [], id: null };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let newline;
      while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith("\r\n", newline) ? 2 : 1));
        if (line === "") {
          if (message.data.length) {
            if (message.id !== null) lastId = message.id;
            const done = onMessage({ event: message.event, id: message.id, data: message.data.join("\n") });
            if (done === "stop") {
              stopped = true;
              controller.abort();
              return;
            }
          } else if (message.id !== null) {
            lastId = message.id;
          }
          message = { event: "message", data: [], id: null };
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") message.event = text;
        else if (field === "data") message.data.push(text);
        else if (field === "id") message.id = text;
        else if (field === "retry" && /^\d+$/.test(text)) retry = Number(text);
      }
    }
  }

  (async () => {
    while (!stopped) {
      try {
        await readOnce();
      } catch (error) {
        if (stopped || controller.signal.aborted) return;
        if (error instanceof ApiError && error.status >= 400 && error.status < 500) {
          onStatus("stopped", error);
          return;
        }
        failures += 1;
      }
      if (stopped) return;
      onStatus("reconnecting");
      const wait = Math.min(10_000, retry * 2 ** Math.min(failures, 4));
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  })();

  return {
    stop() {
      stopped = true;
      controller.abort();
    },
  };
}
