/// The captions page, embedded in the binary: no file is read at run time and nothing is fetched from a network.
/// The HTML carries the title; the script and the style sheet are the same for every page.
struct WebPage: Sendable {
    let html: String

    init(title: String) {
        html = Self.template.replacingOccurrences(of: "{{title}}", with: Self.escaped(title))
    }

    /// Text made safe inside HTML.
    static func escaped(_ text: String) -> String {
        var out = ""
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(c)
            }
        }
        return out
    }

    static let template = #"""
        <!doctype html>
        <html lang="en" data-theme="auto">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="color-scheme" content="light dark">
        <title>{{title}}</title>
        <link rel="icon" href="favicon.svg" type="image/svg+xml">
        <link rel="stylesheet" href="app.css">
        </head>
        <body>
        <header id="bar">
          <h1 id="title">{{title}}</h1>
          <span id="status" role="status" data-state="connecting">connecting…</span>
          <span id="speech" title="speech heard" aria-hidden="true"></span>
          <span id="level" title="input level" aria-hidden="true"><span id="level-fill"></span></span>
          <label class="setting">Size <input id="size" type="range" min="16" max="120" step="2" value="40"></label>
          <button id="theme" type="button">Dark</button>
          <nav aria-label="Transcript downloads">
            <a data-download="transcript.txt" href="transcript.txt" download>txt</a>
            <a data-download="transcript.srt" href="transcript.srt" download>srt</a>
            <a data-download="transcript.vtt" href="transcript.vtt" download>vtt</a>
          </nav>
        </header>
        <main id="scroller">
          <div id="finals" aria-live="polite" aria-relevant="additions"></div>
          <div id="volatile" aria-hidden="true"></div>
        </main>
        <button id="jump" type="button" hidden>Newest ↓</button>
        <script src="app.js"></script>
        </body>
        </html>

        """#

    static let style = #"""
        :root { --size: 40px; --bg: #ffffff; --fg: #111111; --dim: #6b6b6b; --bar: #eeeeee; --bar-fg: #333333;
          --ok: #1f8a3a; --bad: #b00020; }
        :root[data-theme="dark"] { --bg: #000000; --fg: #f2f2f2; --dim: #9a9a9a; --bar: #1a1a1a; --bar-fg: #dddddd;
          --ok: #3ccf63; --bad: #ff6b6b; }
        @media (prefers-color-scheme: dark) {
          :root[data-theme="auto"] { --bg: #000000; --fg: #f2f2f2; --dim: #9a9a9a; --bar: #1a1a1a; --bar-fg: #dddddd;
            --ok: #3ccf63; --bad: #ff6b6b; }
        }
        html, body { height: 100%; margin: 0; }
        body { display: flex; flex-direction: column; background: var(--bg); color: var(--fg);
          font-family: system-ui, "DejaVu Sans", sans-serif; }
        #bar { display: flex; flex-wrap: wrap; gap: 0.4em 1em; align-items: center; padding: 0.4em 0.8em;
          background: var(--bar); color: var(--bar-fg); font-size: 16px; }
        #title { font-size: 16px; margin: 0; font-weight: 600; }
        #status[data-state="live"] { color: var(--ok); }
        #status[data-state="lost"], #status[data-state="refused"] { color: var(--bad); font-weight: 600; }
        #speech { display: inline-block; width: 0.9em; height: 0.9em; border-radius: 50%; background: var(--dim);
          opacity: 0.3; }
        #speech.on { background: var(--ok); opacity: 1; }
        #level { display: inline-block; width: 6em; height: 0.5em; background: var(--bg); border-radius: 0.25em;
          overflow: hidden; }
        #level-fill { display: block; height: 100%; width: 0; background: var(--ok); transition: width 80ms linear; }
        #bar a { color: inherit; }
        #bar button, #bar input { font: inherit; }
        #scroller { flex: 1; overflow-y: auto; padding: 0.3em 0.6em 0.6em; font-size: var(--size); line-height: 1.3; }
        .final { margin: 0 0 0.3em; }
        .volatile { margin: 0; color: var(--dim); }
        .session { border: 0; border-top: 1px dashed var(--dim); margin: 0.5em 0; }
        #jump { position: fixed; right: 1em; bottom: 1em; font-size: 16px; padding: 0.5em 1em; }
        html.obs, html.obs body { background: transparent; }
        html.obs #bar, html.obs #jump { display: none; }
        html.obs #scroller { overflow: hidden; display: flex; flex-direction: column; justify-content: flex-end; }
        html.obs .final, html.obs .volatile { color: #ffffff;
          text-shadow: 0 0 3px #000000, 0 0 3px #000000, 0 0 6px #000000; }
        html.obs .volatile { opacity: 0.75; }

        """#

    static let script = #"""
        "use strict";
        (() => {
          const params = new URLSearchParams(location.search);
          const token = params.get("token") || "";
          const useWebSocket = params.get("transport") === "ws";
          const root = document.documentElement;
          if (params.get("obs") === "1") root.classList.add("obs");
          const $ = (id) => document.getElementById(id);
          const finalsEl = $("finals"), volatileEl = $("volatile"), scroller = $("scroller");
          const statusEl = $("status"), speechEl = $("speech"), levelEl = $("level-fill"), jumpEl = $("jump");
          const query = token ? "?token=" + encodeURIComponent(token) : "";
          for (const a of document.querySelectorAll("a[data-download]")) a.href = a.dataset.download + query;

          // For automation and tests: what the page has shown, and when (milliseconds since 1970).
          const state = window.speechgraphCaptions = {
            session: null, connectedAt: null, messages: 0, volatileTimes: [],
          };

          const store = {
            get(key, fallback) { try { return localStorage.getItem(key) || fallback; } catch (e) { return fallback; } },
            set(key, value) { try { localStorage.setItem(key, value); } catch (e) { /* private mode */ } },
          };
          const size = $("size");
          function applySize(px) { root.style.setProperty("--size", px + "px"); size.value = px; }
          applySize(Number(params.get("size")) || Number(store.get("speechgraph-size", "40")));
          size.addEventListener("input", () => { applySize(size.value); store.set("speechgraph-size", size.value); });
          let theme = params.get("theme") || store.get("speechgraph-theme", "auto");
          const themeButton = $("theme");
          function dark() {
            return theme === "dark" || (theme === "auto" && matchMedia("(prefers-color-scheme: dark)").matches);
          }
          function applyTheme() { root.dataset.theme = theme; themeButton.textContent = dark() ? "Light" : "Dark"; }
          themeButton.addEventListener("click", () => {
            theme = dark() ? "light" : "dark"; store.set("speechgraph-theme", theme); applyTheme();
          });
          applyTheme();

          // The newest line stays in view until the viewer scrolls back; "Newest" brings it back.
          let follow = true;
          function atBottom() { return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 48; }
          scroller.addEventListener("scroll", () => { follow = atBottom(); jumpEl.hidden = follow; });
          jumpEl.addEventListener("click", () => { follow = true; jumpEl.hidden = true; scrollDown(); });
          function scrollDown() { if (follow) scroller.scrollTop = scroller.scrollHeight; }

          const finals = new Map();     // "node/utterance" -> its line
          const volatiles = new Map();  // node -> { el, utterance }
          const maxLines = 2000;
          function clearVolatile(node) {
            const v = volatiles.get(node);
            if (v) { v.el.remove(); volatiles.delete(node); }
          }
          function onResult(ev) {
            const key = ev.node + "/" + ev.utterance;
            if (ev.isFinal) {
              const v = volatiles.get(ev.node);
              if (v && v.utterance <= ev.utterance) clearVolatile(ev.node);
              if (finals.has(key) || !ev.text) return;
              const line = document.createElement("p");
              line.className = "final";
              line.textContent = ev.text;
              line.dataset.key = key;
              finalsEl.appendChild(line);
              finals.set(key, line);
              while (finalsEl.childElementCount > maxLines) {
                const first = finalsEl.firstElementChild;
                if (first.dataset.key) finals.delete(first.dataset.key);
                first.remove();
              }
            } else {
              if (finals.has(key) || !ev.text) return;
              let v = volatiles.get(ev.node);
              if (!v) {
                v = { el: document.createElement("p"), utterance: ev.utterance };
                v.el.className = "volatile";
                volatileEl.appendChild(v.el);
                volatiles.set(ev.node, v);
              }
              v.utterance = ev.utterance;
              v.el.textContent = ev.text;
              if (state.volatileTimes.length < 200) state.volatileTimes.push(Date.now());
            }
            scrollDown();
          }
          let lastMessageAt = Date.now();
          function onEvent(ev) {
            lastMessageAt = Date.now();
            state.messages += 1;
            switch (ev.type) {
              case "result": onResult(ev); break;
              case "speechStarted": case "speechResumed": speechEl.classList.add("on"); break;
              case "speechEnded": case "speechPaused": speechEl.classList.remove("on"); break;
              case "level": {
                const db = Math.max(...(ev.rms && ev.rms.length ? ev.rms : [-200]));
                levelEl.style.width = Math.max(0, Math.min(100, (db + 60) / 60 * 100)).toFixed(0) + "%";
                break;
              }
            }
          }

          let source = null, socket = null, timer = null, retry = 500, ended = false;
          function setStatus(kind, text) { statusEl.dataset.state = kind; statusEl.textContent = text; }
          function onHello(hello) {
            if (state.session !== null && hello.session !== state.session) {
              // The graph started again: a new session, a rule under the old one.
              const rule = document.createElement("hr");
              rule.className = "session";
              finalsEl.appendChild(rule);
              finals.clear();
              for (const node of [...volatiles.keys()]) clearVolatile(node);
            }
            lastMessageAt = Date.now();
            state.session = hello.session;
            state.connectedAt = Date.now();
            ended = false;
            retry = 500;
            setStatus("live", "live");
          }
          function onEnd() {
            ended = true;
            for (const node of [...volatiles.keys()]) clearVolatile(node);
            speechEl.classList.remove("on");
            levelEl.style.width = "0";
            setStatus("ended", "the stream has ended");
            schedule(5000);
          }
          function lost() {
            if (!ended) setStatus("lost", "connection lost, reconnecting…");
            schedule(retry);
            retry = Math.min(retry * 2, 5000);
          }
          function schedule(delay) {
            clearTimeout(timer);
            timer = setTimeout(connect, delay);
          }
          function close() {
            const es = source, ws = socket;
            source = null;
            socket = null;
            if (es) es.close();
            if (ws) ws.close();
          }
          // The server sends something at least every 15 s: silence for 40 s is a dead connection the network
          // did not report (a laptop that slept, a phone that changed networks).
          setInterval(() => {
            if ((source || socket) && Date.now() - lastMessageAt > 40000) { close(); lost(); }
          }, 5000);
          async function connect() {
            // A refused token is not a lost connection: say so, and ask again now and then.
            try {
              const answer = await fetch("events" + query, { method: "HEAD", cache: "no-store" });
              if (answer.status === 401 || answer.status === 403) {
                setStatus("refused", answer.status === 401 ? "refused: wrong or missing token" : "refused");
                schedule(10000);
                return;
              }
            } catch (e) {
              lost();
              return;
            }
            lastMessageAt = Date.now();
            if (useWebSocket) {
              const url = new URL("events" + query, location.href);
              url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
              const ws = socket = new WebSocket(url.href);
              ws.onmessage = (m) => {
                const ev = JSON.parse(m.data);
                if (ev.type === "hello") onHello(ev);
                else if (ev.type === "ping") lastMessageAt = Date.now();
                else onEvent(ev);
              };
              ws.onclose = (e) => {
                if (socket !== ws) return;
                socket = null;
                if (e.code === 1000 && e.reason === "end") onEnd(); else lost();
              };
            } else {
              const es = source = new EventSource("events" + query);
              es.addEventListener("hello", (m) => onHello(JSON.parse(m.data)));
              es.addEventListener("ping", () => { lastMessageAt = Date.now(); });
              es.addEventListener("end", () => { es.close(); source = null; onEnd(); });
              es.onmessage = (m) => onEvent(JSON.parse(m.data));
              es.onerror = () => {
                if (source !== es) return;
                es.close();
                source = null;
                lost();
              };
            }
          }
          connect();
        })();

        """#

    static let icon = #"""
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">\#
        <rect width="16" height="16" rx="3" fill="#1f8a3a"/>\#
        <rect x="3" y="5" width="10" height="2" fill="#fff"/><rect x="3" y="9" width="7" height="2" fill="#fff"/></svg>

        """#
}
