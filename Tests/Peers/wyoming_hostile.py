#!/usr/bin/env python3
"""Hostile and broken Wyoming clients, for the robustness tests. Each case prints one JSON line:
{"case": NAME, "ok": bool, "detail": ...}; `ok` says whether the server behaved as the protocol and
docs/wyoming.md promise. Raw sockets for what a real client would never send; PyPI's `wyoming` for the rest.

  wyoming_hostile.py HOST PORT cases [NAME...]     the named cases (all by default)
  wyoming_hostile.py HOST PORT fuzz N SEED         N fuzzed frames, each on its own connection
  wyoming_hostile.py HOST PORT hold N              opens N connections, prints what each got, holds them
                                                   open until standard input closes
  wyoming_hostile.py HOST PORT drain-probe FILE    streams FILE at real time (then silence) and never stops, printing
                                                   {"trace": type} for each event, until the server ends the
                                                   connection; then one case line (for a server being drained)
"""
import asyncio
import json
import random
import socket
import sys
import threading
import time

from wyoming.client import AsyncTcpClient
from wyoming.info import Describe, Info


def connect(host, port, timeout=10):
    s = socket.create_connection((host, port), timeout=timeout)
    s.settimeout(timeout)
    return s


def parse_events(buffer):
    """The whole events at the start of `buffer` (payloads skipped), and what is left of it."""
    events = []
    while (newline := buffer.find(b"\n")) >= 0:
        header = json.loads(buffer[:newline])
        n, p = header.get("data_length") or 0, header.get("payload_length") or 0
        if len(buffer) < newline + 1 + n + p:
            break
        if n:
            header.setdefault("data", {}).update(json.loads(buffer[newline + 1:newline + 1 + n]))
        buffer = buffer[newline + 1 + n + p:]
        events.append(header)
    return events, buffer


def read_events(s, limit=10):
    """Events the server sends until it closes the connection (or `limit` events, or a timeout)."""
    data = b""
    events = []
    closed = False
    try:
        while len(events) < limit:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            got, data = parse_events(data + chunk)
            events += got
    except socket.timeout:
        pass
    except (ConnectionResetError, BrokenPipeError):
        closed = True
    return events, closed


def frame(header, data=None, payload=b""):
    h = dict(header)
    body = b""
    if data is not None:
        body = json.dumps(data).encode()
        h["data_length"] = len(body)
    if payload:
        h["payload_length"] = len(payload)
    return json.dumps(h).encode() + b"\n" + body + payload


def error_then_close(s, payload):
    try:
        s.sendall(payload)
    except (BrokenPipeError, ConnectionResetError):
        pass
    events, closed = read_events(s)
    types = [e["type"] for e in events]
    return types[:1] == ["error"] and closed, {"events": events, "closed": closed}


def case_long_header(host, port):
    s = connect(host, port)
    return error_then_close(s, b'{"type": "describe", "pad": "' + b"x" * (70 * 1024))


def case_huge_lengths(host, port):
    results = []
    for key in ["data_length", "payload_length"]:
        s = connect(host, port)
        ok, detail = error_then_close(s, json.dumps({"type": "audio-chunk", key: 1 << 30}).encode() + b"\n")
        results.append((ok, detail))
    return all(r[0] for r in results), [r[1] for r in results]


def case_bad_json(host, port):
    s = connect(host, port)
    return error_then_close(s, b'{"type": "describe", oops\n')


def case_binary_garbage(host, port):
    s = connect(host, port)
    return error_then_close(s, bytes(random.Random(7).randrange(256) for _ in range(4096)) + b"\n")


def case_unknown_event_ignored(host, port):
    s = connect(host, port)
    s.sendall(frame({"type": "no-such-event"}, {"x": 1}) + frame({"type": "describe"}))
    events, _ = read_events(s, limit=1)
    return [e["type"] for e in events] == ["info"], events


def case_half_frame_then_close(host, port):
    s = connect(host, port)
    s.sendall(json.dumps({"type": "audio-chunk", "payload_length": 64000}).encode() + b"\n" + b"\0" * 1000)
    s.close()
    return True, "sent"


def case_vanish_mid_utterance(host, port):
    """Streams half a second of audio, then closes without audio-stop."""
    s = connect(host, port)
    s.sendall(frame({"type": "transcribe"}, {}) + frame({"type": "audio-start"}, {"rate": 16000, "width": 2, "channels": 1}))
    for _ in range(25):
        s.sendall(frame({"type": "audio-chunk"}, {"rate": 16000, "width": 2, "channels": 1}, b"\1\0" * 320))
    s.close()
    return True, "sent"


def case_bad_audio_format(host, port):
    s = connect(host, port)
    s.sendall(frame({"type": "audio-start"}, {"rate": 16000, "width": 3, "channels": 1}))
    events, _ = read_events(s, limit=1)
    ok = [e["type"] for e in events] == ["error"]
    # The connection goes on: the next request is answered.
    s.sendall(frame({"type": "audio-stop"}) + frame({"type": "describe"}))
    more, _ = read_events(s, limit=1)
    return ok and [e["type"] for e in more] == ["info"], events + more


def case_unknown_model(host, port):
    """A model nobody offers: an error. The request was for that stream only: the next one, with no transcribe
    before it, gets the default model (it got the same error again)."""
    s = connect(host, port, timeout=30)
    start = frame({"type": "audio-start"}, {"rate": 16000, "width": 2, "channels": 1})
    s.sendall(frame({"type": "transcribe"}, {"name": "no-such-model"}) + start)
    events, _ = read_events(s, limit=1)
    ok = [e["type"] for e in events] == ["error"] and "offers" in events[0]["data"]["text"]
    chunk = frame({"type": "audio-chunk"}, {"rate": 16000, "width": 2, "channels": 1}, b"\0\0" * 320)
    s.sendall(frame({"type": "audio-stop"}) + start + chunk * 25 + frame({"type": "audio-stop"}))
    more, _ = read_events(s, limit=3)
    types = [e["type"] for e in more]
    # A name that is not a string (5): an error too, not the default model.
    s.sendall(frame({"type": "transcribe"}, {"name": 5}) + start)
    odd, _ = read_events(s, limit=1)
    ok = ok and [e["type"] for e in odd] == ["error"] and "'name' must be" in odd[0]["data"]["text"]
    return ok and "transcript" in types and "error" not in types, events + more + odd


async def describe_in(host, port):
    async with AsyncTcpClient(host, port) as client:
        await client.write_event(Describe().event())
        start = time.monotonic()
        while True:
            # Generous: what is asserted is that the server answers at all, not how fast (the machine may be loaded).
            event = await asyncio.wait_for(client.read_event(), timeout=60)
            if event is None:
                return None
            if Info.is_type(event.type):
                return time.monotonic() - start


def case_describe_after(host, port):
    seconds = asyncio.run(describe_in(host, port))
    return seconds is not None, {"seconds": seconds}


def case_double_start(host, port):
    """A second audio-start before the first stream ended: the first is dropped, the second answered once."""
    s = connect(host, port, timeout=30)
    start = frame({"type": "audio-start"}, {"rate": 16000, "width": 2, "channels": 1})
    chunk = frame({"type": "audio-chunk"}, {"rate": 16000, "width": 2, "channels": 1}, b"\0\0" * 320)
    s.sendall(frame({"type": "transcribe"}, {}) + start + chunk * 25 + start + chunk * 25 + frame({"type": "audio-stop"}))
    events, _ = read_events(s, limit=3)
    types = [e["type"] for e in events]
    return types.count("transcript") == 1 and "error" not in types, types


def case_idle_stream(host, port):
    """Starts a stream, then says nothing: with a short --idle-timeout the server gives up on it too."""
    s = connect(host, port, timeout=30)
    s.sendall(frame({"type": "audio-start"}, {"rate": 16000, "width": 2, "channels": 1})
              + frame({"type": "audio-chunk"}, {"rate": 16000, "width": 2, "channels": 1}, b"\0\0" * 320))
    events, closed = read_events(s)
    return [e["type"] for e in events][-1:] == ["error"] and closed, events


def case_idle(host, port):
    """Says nothing: with a short --idle-timeout the server sends an error event and closes."""
    s = connect(host, port, timeout=30)
    events, closed = read_events(s)
    return [e["type"] for e in events] == ["error"] and events[0]["data"]["code"] == "idle" and closed, events


CASES = {
    "long-header": case_long_header,
    "huge-lengths": case_huge_lengths,
    "bad-json": case_bad_json,
    "binary-garbage": case_binary_garbage,
    "unknown-event": case_unknown_event_ignored,
    "half-frame": case_half_frame_then_close,
    "vanish": case_vanish_mid_utterance,
    "bad-audio": case_bad_audio_format,
    "unknown-model": case_unknown_model,
    "describe-after": case_describe_after,
    "double-start": case_double_start,
}


def fuzz_frame(rng):
    kind = rng.randrange(8)
    types = ["describe", "transcribe", "audio-start", "audio-chunk", "audio-stop", "x" * rng.randrange(1, 200), ""]
    if kind == 0:  # binary garbage, with or without a newline
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 3000))) + (b"\n" if rng.random() < .5 else b"")
    if kind == 1:  # lying lengths: claims more than it sends, then the connection closes
        return json.dumps({"type": rng.choice(types), "data_length": rng.randrange(1, 10000),
                           "payload_length": rng.randrange(0, 100000)}).encode() + b"\n{\"a\""
    if kind == 2:  # enormous lengths
        return json.dumps({"type": "audio-chunk", rng.choice(["data_length", "payload_length"]):
                           rng.choice([1 << 30, 1 << 40, 10**18, -5, 1.5, "12", None])}).encode() + b"\n"
    if kind == 3:  # fields of the wrong types
        return frame({"type": "audio-start"}, {"rate": rng.choice([0, -1, 1e12, "16000", None, [], 16000]),
                                               "width": rng.choice([0, 1, 2, 3, 4, "2", None]),
                                               "channels": rng.choice([0, 1, 2, 1000, -3, None])})
    if kind == 4:  # a stream with broken chunks
        return (frame({"type": "audio-start"}, {"rate": 16000, "width": 2, "channels": 1})
                + frame({"type": "audio-chunk"}, {"rate": 8000, "width": 2, "channels": 1}, b"\0" * rng.randrange(1, 999))
                + frame({"type": "audio-chunk"}, {"rate": 16000, "width": 2, "channels": 1}, b"\7" * rng.randrange(1, 999)))
    if kind == 5:  # JSON that is not an object, or data that is not
        return rng.choice([b"[1,2,3]\n", b"null\n", b"\"describe\"\n", b"42\n",
                           json.dumps({"type": "transcribe", "data": [1]}).encode() + b"\n",
                           json.dumps({"type": "transcribe", "data_length": 3}).encode() + b"\n[1]"])
    if kind == 6:  # a very long line without a newline
        return b"{\"type\": \"" + b"a" * rng.randrange(60_000, 200_000)
    # a header cut anywhere
    good = frame({"type": "audio-start"}, {"rate": 16000, "width": 2, "channels": 1})
    return good[: rng.randrange(1, len(good))]


def fuzz(host, port, n, seed):
    rng = random.Random(seed)
    refused = 0
    for _ in range(n):
        try:
            s = connect(host, port, timeout=5)
            s.sendall(fuzz_frame(rng))
            # Half the time wait for the server's answer, half the time vanish at once.
            if rng.random() < 0.5:
                s.shutdown(socket.SHUT_WR)
                read_events(s, limit=3)
            s.close()
        except OSError:
            refused += 1
    print(json.dumps({"case": "fuzz", "ok": True, "detail": {"frames": n, "refused_or_reset": refused}}))


def hold(host, port, n):
    """Opens n connections at once, then reads what each got (up to 3 s each): a full server answers the extra ones
    with an error whose code is busy; admitted ones get nothing, or an idle error once --idle-timeout passes."""
    sockets = [connect(host, port) for _ in range(n)]
    got = []
    for s in sockets:
        s.settimeout(3)
        events, closed = read_events(s, limit=1)
        got.append({"codes": [e.get("data", {}).get("code", e["type"]) for e in events], "closed": closed})
    print(json.dumps({"case": "hold", "ok": True, "detail": got}), flush=True)
    sys.stdin.read()


def drain_probe(host, port, path):
    """A satellite that streams without end while the server drains: it must get its transcript, then the end of the
    stream (FIN, not a reset), and the server must go on reading what it still sends for a while (closing a socket
    with unread data makes the kernel reset the connection, and a client can lose the replies it had not read)."""
    import select
    import wave

    with wave.open(path, "rb") as w:
        rate, width, channels = w.getframerate(), w.getsampwidth(), w.getnchannels()
        audio = w.readframes(w.getnframes())
    fmt = {"rate": rate, "width": width, "channels": channels}
    step = int(rate * 0.02) * width * channels
    s = connect(host, port)
    s.sendall(frame({"type": "transcribe"}, {"language": "en"}) + frame({"type": "audio-start"}, fmt))
    buffer, types, end = b"", [], "timeout"
    start = time.monotonic()
    k = 0
    while time.monotonic() - start < 300 and end == "timeout":
        chunk = audio[k * step:(k + 1) * step] or bytes(step)
        try:
            s.sendall(frame({"type": "audio-chunk"}, fmt, chunk))
        except OSError as e:
            end = f"send failed: {type(e).__name__}"
            break
        k += 1
        while (wait := start + k * 0.02 - time.monotonic()) > 0:
            if not select.select([s], [], [], wait)[0]:
                continue
            try:
                got = s.recv(65536)
            except ConnectionResetError:
                end = "reset"
                break
            if not got:
                end = "fin"
                break
            events, buffer = parse_events(buffer + got)
            for e in events:
                types.append(e["type"])
                print(json.dumps({"trace": e["type"]}), flush=True)
    # After the end of the server's stream, the server still reads: 16 MB of chunks, more than the sockets' buffers
    # hold, go through within a second (a server that had stopped reading would leave them stuck in the buffers).
    after = "not tried"
    if end == "fin":
        s.settimeout(1.0)
        try:
            for _ in range(256):
                s.sendall(frame({"type": "audio-chunk"}, fmt, bytes(65536)))
            after = "read"
        except OSError as e:
            after = type(e).__name__
    s.close()
    ok = "transcript" in types and end == "fin" and after == "read"
    print(json.dumps({"case": "drain-probe", "ok": ok, "detail": {"events": types, "end": end, "after": after}}))


def case_drip(host, port):
    """A frame a byte at a time, a byte every 0.3 s: with a short --idle-timeout the server gives up on it as on a
    client that says nothing (bytes that make no event are not activity)."""
    s = connect(host, port, timeout=0.3)
    header = frame({"type": "describe"})
    start = time.monotonic()
    events, closed = [], False
    for byte in header * 20:
        try:
            s.sendall(bytes([byte]))
            got = s.recv(65536)
            if not got:
                closed = True
                break
            events += parse_events(got)[0]
        except socket.timeout:
            continue
        except (BrokenPipeError, ConnectionResetError):
            closed = True
            break
        if events and events[-1]["type"] == "error":
            break
    seconds = time.monotonic() - start
    return [e["type"] for e in events][-1:] == ["error"] and seconds < 10, {"events": events, "seconds": seconds}


def case_start_churn(host, port):
    """audio-start after audio-start, each with a second of audio and no audio-stop, then a stream that ends: one
    transcript (the test watches the server's threads: one graph at a time for the connection, not one per start)."""
    s = connect(host, port, timeout=120)
    fmt = {"rate": 16000, "width": 2, "channels": 1}
    start = frame({"type": "audio-start"}, fmt)
    rng = random.Random(7)
    # Noise loud enough to be speech to a VAD: each stream's graph has work to do.
    noise = b"".join(rng.randrange(-8000, 8000).to_bytes(2, "little", signed=True) for _ in range(1600))
    chunk = frame({"type": "audio-chunk"}, fmt, noise)
    # What the dropped streams get (nothing, or an answer to a stream already replaced) is read meanwhile and left.
    events, done = [], threading.Event()

    def read():
        data = b""
        while not done.is_set():
            try:
                got = s.recv(65536)
            except socket.timeout:
                continue
            if not got:
                return
            new, data = parse_events(data + got)
            events.extend(new)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    end = time.monotonic() + 8
    while time.monotonic() < end:
        s.sendall(start + chunk * 10)
    silence = frame({"type": "audio-chunk"}, fmt, b"\0\0" * 1600)
    s.sendall(frame({"type": "transcribe"}, {}) + start + silence * 10 + frame({"type": "audio-stop"}))
    deadline = time.monotonic() + 120
    while "transcript" not in [e["type"] for e in events] and time.monotonic() < deadline:
        time.sleep(0.05)
    done.set()
    types = [e["type"] for e in events]
    return types.count("transcript") == 1 and "error" not in types, types


def case_describe_flood(host, port):
    """describe after describe for 10 s, never reading the replies (the test watches the server's memory: it stops
    reading a connection whose replies cannot be written)."""
    s = connect(host, port, timeout=0.5)
    batch = frame({"type": "describe"}) * 1000
    pending, sent = b"", 0
    end = time.monotonic() + 10
    while time.monotonic() < end:
        pending = pending or batch
        try:
            n = s.send(pending)
        except socket.timeout:
            continue
        pending, sent = pending[n:], sent + n
    s.close()
    return True, {"sent": sent}


OPTIONAL = {
    "idle": case_idle,
    "idle-stream": case_idle_stream,
    "drip": case_drip,
    "start-churn": case_start_churn,
    "describe-flood": case_describe_flood,
}


def main():
    host, port, command = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if command == "fuzz":
        fuzz(host, port, int(sys.argv[4]), int(sys.argv[5]))
    elif command == "hold":
        hold(host, port, int(sys.argv[4]))
    elif command == "drain-probe":
        drain_probe(host, port, sys.argv[4])
    else:
        for name in sys.argv[4:] or list(CASES):
            try:
                ok, detail = {**CASES, **OPTIONAL}[name](host, port)
            except Exception as e:  # noqa: BLE001 (a failed case is reported, the others still run)
                ok, detail = False, f"{type(e).__name__}: {e}"
            print(json.dumps({"case": name, "ok": bool(ok), "detail": detail}, default=str), flush=True)


if __name__ == "__main__":
    main()
