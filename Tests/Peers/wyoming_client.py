#!/usr/bin/env python3
"""A Wyoming client on PyPI's `wyoming` package (its AsyncTcpClient), for the tests and `make bench`.

  wyoming_client.py URI describe
      prints the info event's data as JSON.
  wyoming_client.py URI transcribe [options] FILE...
      sends each WAV file as one transcription (transcribe, audio-start, 20 ms audio-chunks, audio-stop) and
      prints one JSON object per file: file, text, events (the types received, in order), chunks (the
      transcript-chunk texts), latency (seconds from audio-stop to the transcript; negative when the transcript
      came first, at the end of speech), arrived (seconds from the first chunk to the transcript), sent (seconds of
      audio sent before the transcript came), error.
      --clients N sends the files over N connections at once (file k on client k mod N, each client's files
      one after another); --language L asks for that language (default en); --trace prints {"trace": type} for each event as it comes; --realtime paces the audio like a live microphone; --stop-on-transcript stops
      sending when the transcript comes (a satellite with server-side endpointing); --hold sends audio-stop only once the
      transcript came (the audio sent as fast as the server takes it, the answer from the server's end of speech or
      its no-speech timeout).
"""
import argparse
import asyncio
import json
import sys
import time
import wave

from wyoming.asr import Transcribe, Transcript, TranscriptChunk
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.info import Describe, Info


async def describe(uri):
    async with AsyncTcpClient.from_uri(uri) as client:
        await client.write_event(Describe().event())
        while True:
            event = await asyncio.wait_for(client.read_event(), timeout=5)
            if event is None:
                raise SystemExit("connection closed before info")
            if Info.is_type(event.type):
                print(json.dumps(event.data))
                return


def read_wav(path):
    with wave.open(path, "rb") as w:
        return w.getframerate(), w.getsampwidth(), w.getnchannels(), w.readframes(w.getnframes())


async def transcribe_one(uri, path, args):
    rate, width, channels, audio = read_wav(path)
    result = {"file": path, "text": None, "events": [], "chunks": [], "latency": None, "sent": None, "error": None}
    bytes_per_chunk = args.chunk_bytes or int(rate * args.chunk_ms / 1000) * width * channels
    try:
        async with AsyncTcpClient.from_uri(uri) as client:
            names = args.names.split("|") if args.names else None
            await client.write_event(
                Transcribe(name=args.name, language=args.language, vad_sensitivity=args.vad_sensitivity,
                           transcript_names=names).event())
            await client.write_event(AudioStart(rate=rate, width=width, channels=channels).event())
            done = asyncio.Event()
            stopped_at = [None]
            start = time.monotonic()
            sent = [0.0]

            async def receive():
                while True:
                    event = await client.read_event()
                    if event is None:
                        if result["text"] is None and result["error"] is None:
                            result["error"] = "closed"
                        break
                    result["events"].append(event.type)
                    if args.trace:
                        print(json.dumps({"trace": event.type}), flush=True)
                    if TranscriptChunk.is_type(event.type):
                        result["chunks"].append(TranscriptChunk.from_event(event).text)
                    elif Transcript.is_type(event.type):
                        now = time.monotonic()
                        result["text"] = Transcript.from_event(event).text
                        result["latency"] = now - stopped_at[0] if stopped_at[0] is not None else None
                        result["arrived"] = now - start
                        result["sent"] = sent[0]
                        if "transcript-start" in result["events"]:
                            # A streamed transcript ends with transcript-stop, after the transcript.
                            end = await asyncio.wait_for(client.read_event(), timeout=args.timeout)
                            if end is not None:
                                result["events"].append(end.type)
                        break
                    elif Error.is_type(event.type):
                        result["error"] = Error.from_event(event).text
                        break
                done.set()

            receiver = asyncio.create_task(receive())
            offset = 0
            while offset < len(audio) and not (args.stop_on_transcript and done.is_set()):
                chunk = audio[offset:offset + bytes_per_chunk]
                await client.write_event(AudioChunk(rate=rate, width=width, channels=channels, audio=chunk).event())
                offset += len(chunk)
                sent[0] = offset / (width * channels * rate)
                if args.realtime:
                    delay = start + sent[0] - time.monotonic()
                    if delay > 0:
                        await asyncio.sleep(delay)
            if args.hold:
                # A satellite that streams on until it is answered: no audio-stop until the transcript came.
                await asyncio.wait_for(done.wait(), timeout=args.timeout)
            await client.write_event(AudioStop().event())
            stopped_at[0] = time.monotonic()
            if result["latency"] is None and result["text"] is not None:
                result["latency"] = -(stopped_at[0] - start - result["arrived"])
            await asyncio.wait_for(receiver, timeout=args.timeout)
    except asyncio.TimeoutError:
        # Said as such: leaving the connection on a timeout ends the receiver too, which would say "closed".
        result["error"] = f"timeout: no answer within {args.timeout:g} s"
    except Exception as e:  # noqa: BLE001 (reported per file)
        result["error"] = result["error"] or f"{type(e).__name__}: {e}"
    return result


async def transcribe(uri, args):
    queues = [args.files[k::args.clients] for k in range(args.clients)]

    async def client(files, delay):
        await asyncio.sleep(delay)
        out = []
        for path in files:
            out.append(await transcribe_one(uri, path, args))
        return out

    results = await asyncio.gather(*(client(q, k * args.stagger) for k, q in enumerate(queues)))
    for batch in results:
        for r in batch:
            print(json.dumps(r), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("uri")
    p.add_argument("command", choices=["describe", "transcribe"])
    p.add_argument("files", nargs="*")
    p.add_argument("--clients", type=int, default=1)
    p.add_argument("--stagger", type=float, default=0.0, help="seconds between the clients' starts")
    p.add_argument("--chunk-ms", type=float, default=20)
    p.add_argument("--chunk-bytes", type=int, default=0, help="chunks of this many bytes (any, odd too), not --chunk-ms")
    p.add_argument("--realtime", action="store_true")
    p.add_argument("--stop-on-transcript", action="store_true")
    p.add_argument("--hold", action="store_true", help="send audio-stop only after the transcript came")
    p.add_argument("--name")
    p.add_argument("--language", default="en")
    p.add_argument("--names", help="transcript_names, separated by |")
    p.add_argument("--vad-sensitivity")
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--trace", action="store_true", help="print each event received as it comes")
    args = p.parse_intermixed_args()
    if args.command == "describe":
        asyncio.run(describe(args.uri))
    else:
        asyncio.run(transcribe(args.uri, args))


if __name__ == "__main__":
    sys.exit(main())
