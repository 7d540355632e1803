#!/usr/bin/env python3
"""The captions page in a real browser: Debian's headless chromium, driven by Selenium through chromedriver.

Starts a speechgraph graph with a `web` node (and a `jsonl` sink writing to --jsonl), opens the page the node
prints on standard error, and watches it:
- when the first result reaches the jsonl file (polled every 10 ms) and when the page first shows volatile text
  (the page records it in window.speechgraphCaptions);
- a reload mid-stream (after --reload-after final results), onto the WebSocket transport (?transport=ws): the
  page must show the replayed finals and go on with new ones;
- at the end of the stream, the page's final lines against the jsonl sink's final results, word for word.
Takes a screenshot (--screenshot) while volatile text is on screen. Prints one JSON object of figures on stdout.
Stops only the processes it started, by PID.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service


def now_ms():
    return time.time() * 1000.0


class JsonlWatcher(threading.Thread):
    """Reads the jsonl sink's file as it grows; records the wall time of the first result and the finals."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path = path
        self.first_result_at = None
        self.result_times = []
        self.finals = []
        self.done = False
        self.lock = threading.Lock()

    def run(self):
        offset = 0
        partial = ""
        while not self.done:
            try:
                with open(self.path, encoding="utf-8") as f:
                    f.seek(offset)
                    chunk = f.read()
                    offset = f.tell()
            except FileNotFoundError:
                chunk = ""
            if chunk:
                seen = now_ms()
                partial += chunk
                *lines, partial = partial.split("\n")
                for line in lines:
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    if event.get("type") != "result":
                        continue
                    with self.lock:
                        if self.first_result_at is None:
                            self.first_result_at = seen
                        self.result_times.append(seen)
                        if event.get("isFinal") and event.get("text"):
                            self.finals.append(event["text"])
            time.sleep(0.01)

    def snapshot(self):
        with self.lock:
            return self.first_result_at, list(self.finals)

    def first_result_after(self, t):
        with self.lock:
            return next((x for x in self.result_times if x >= t), None)


def page_state(driver):
    return driver.execute_script(
        "const s = window.speechgraphCaptions || {};"
        "return {session: s.session, connectedAt: s.connectedAt, volatileTimes: s.volatileTimes || [],"
        " messages: s.messages, status: document.getElementById('status').dataset.state,"
        " statusText: document.getElementById('status').textContent,"
        " finals: [...document.querySelectorAll('#finals .final')].map(e => e.textContent),"
        " volatile: [...document.querySelectorAll('#volatile .volatile')].map(e => e.textContent).join(' '),"
        " live: document.getElementById('finals').getAttribute('aria-live')};")


def wait_until(condition, timeout, step=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    return condition()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--speechgraph", required=True)
    ap.add_argument("--graph", required=True)
    ap.add_argument("--jsonl", required=True)
    ap.add_argument("--screenshot", required=True)
    ap.add_argument("--reload-after", type=int, default=6, help="final results before the reload")
    ap.add_argument("--timeout", type=float, default=400)
    args = ap.parse_args()

    profile = tempfile.mkdtemp(prefix="speechgraph-chromium-")
    options = Options()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,720", "--no-first-run", "--disable-extensions",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    driver = None
    graph = None
    result = {"ok": False}
    try:
        driver = webdriver.Chrome(options=options, service=service)
        driver.set_page_load_timeout(30)
        # A blank page first: the browser is up before the graph starts, so the page is open before the first
        # result.
        driver.get("about:blank")

        watcher = JsonlWatcher(args.jsonl)
        graph = subprocess.Popen([args.speechgraph, "run", args.graph], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
        started = now_ms()
        watcher.start()
        stderr_lines = []
        url_holder = {}

        def read_stderr():
            for line in graph.stderr:
                stderr_lines.append(line)
                m = re.search(r"captions at (http://\S+)", line)
                if m and "url" not in url_holder:
                    url_holder["url"] = m.group(1)

        threading.Thread(target=read_stderr, daemon=True).start()
        if not wait_until(lambda: "url" in url_holder or graph.poll() is not None, 60):
            raise RuntimeError("no address on standard error: " + "".join(stderr_lines))
        if "url" not in url_holder:
            raise RuntimeError("speechgraph exited: " + "".join(stderr_lines))
        url = url_holder["url"]
        driver.get(url)
        if not wait_until(lambda: page_state(driver)["connectedAt"], 20):
            raise RuntimeError("the page did not connect: " + json.dumps(page_state(driver)))
        connected_at = page_state(driver)["connectedAt"]

        # The first result, then the page's first volatile text.
        if not wait_until(lambda: watcher.snapshot()[0], 60):
            raise RuntimeError("no result in the jsonl file")
        first_result_at = watcher.snapshot()[0]
        state = page_state(driver)
        result["connected_ms_after_start"] = round(connected_at - started)
        result["first_result_ms_after_start"] = round(first_result_at - started)
        result["connected_before_first_result"] = connected_at < first_result_at
        # The first result the page could show: the first one if the page was open before it (the usual case),
        # else the first written after the page connected (a slow browser start on a loaded machine).
        reference = first_result_at if connected_at < first_result_at else wait_until(
            lambda: watcher.first_result_after(connected_at), 30)
        shown = wait_until(
            lambda: next((t for t in page_state(driver)["volatileTimes"] if t >= reference - 50), None), 10)
        if reference and shown:
            result["volatile_after_first_result_ms"] = round(shown - reference)
        result["aria_live"] = state["live"]

        # Mid-stream: a screenshot with volatile text on screen, then a reload onto the WebSocket.
        wait_until(lambda: len(watcher.snapshot()[1]) >= args.reload_after, 120)
        wait_until(lambda: page_state(driver)["volatile"].strip(), 20)
        driver.save_screenshot(args.screenshot)
        before = page_state(driver)
        result["finals_before_reload"] = len(before["finals"])
        separator = "&" if "?" in url else "?"
        driver.get(url + separator + "transport=ws")
        wait_until(lambda: page_state(driver)["connectedAt"], 20)
        # The replay comes right after the hello: give the page the time to show it.
        wait_until(lambda: len(page_state(driver)["finals"]) >= result["finals_before_reload"], 20)
        after = page_state(driver)
        result["reload_replayed_finals"] = len(after["finals"])
        result["reload_same_session"] = after["session"] == before["session"]
        # New results after the reload: a final line the page did not have.
        grew = wait_until(lambda: len(page_state(driver)["finals"]) > len(after["finals"]), 60)
        result["reload_recovered"] = bool(
            after["connectedAt"] and result["reload_same_session"]
            and result["reload_replayed_finals"] >= result["finals_before_reload"] and grew)

        # The end of the stream: the graph exits; the page says so and keeps its text.
        remaining = args.timeout - (now_ms() - started) / 1000
        graph.wait(timeout=max(remaining, 10))
        result["exit_status"] = graph.returncode
        wait_until(lambda: page_state(driver)["status"] == "ended", 15)
        watcher.done = True
        final_state = page_state(driver)
        # The graph has exited: the whole file, read again, is every final result.
        jsonl_finals = []
        for line in open(args.jsonl, encoding="utf-8"):
            event = json.loads(line) if line.strip() else {}
            if event.get("type") == "result" and event.get("isFinal") and event.get("text"):
                jsonl_finals.append(event["text"])
        page_words = " ".join(final_state["finals"]).split()
        jsonl_words = " ".join(jsonl_finals).split()
        result["status_at_end"] = final_state["status"]
        result["page_final_lines"] = len(final_state["finals"])
        result["jsonl_final_results"] = len(jsonl_finals)
        result["page_words"] = len(page_words)
        result["jsonl_words"] = len(jsonl_words)
        result["final_text_equal"] = page_words == jsonl_words
        if page_words != jsonl_words:
            result["page_text"] = " ".join(page_words)
            result["jsonl_text"] = " ".join(jsonl_words)
        result["ok"] = True
    except Exception as error:  # reported in the JSON: the Swift test says what failed
        result["error"] = f"{type(error).__name__}: {error}"
    finally:
        if graph is not None and graph.poll() is None:
            os.kill(graph.pid, signal.SIGKILL)
            graph.wait()
        if driver is not None:
            driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
