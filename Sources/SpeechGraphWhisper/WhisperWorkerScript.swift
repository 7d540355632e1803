/// The engine's process: faster-whisper (PyPI) on CTranslate2, in Python, started by ``WhisperWorker`` as
/// `python3 -c SCRIPT MODEL_DIR COMPUTE THREADS`. Kept here, in the binary, so that it is found wherever speechgraph
/// is installed or cloned.
///
/// The protocol, on the process's standard input and output (its standard error is its log):
/// - after loading, one line: `{"ready": true, "load_s": S}`, or `{"error": "..."}` and exit 1;
/// - each request: a JSON line `{"id": N, "samples": COUNT, "beam": B, "words": BOOL, "prompt": S|null,
///   "hotwords": S|null, "language": S|null, "context": S|null, "window": W}` followed by COUNT samples, signed 16-bit
///   little-endian at 16 kHz; with a `context`, the text of that context's earlier requests (the last 1,000
///   characters; not what a decoding that needed a temperature above 0.5, or that repeats itself, wrote: it starts
///   again from nothing then, as faster-whisper's prompt_reset_on_temperature does) goes before the prompt as what
///   came before, its digits as words (at most 256 contexts kept, the oldest dropped); with a `window` W below 30
///   (seconds), audio at least 10 s shorter than W is read in an encoder window of W seconds instead of Whisper's 30
///   (the encoder's and the decoder's cross-attention's work shrink with it), its tokens capped at 24 + 12 a
///   second, and read again in the 30 s window when that reading is doubtful (below: how Whisper loops on a short
///   window of noise);
/// - each answer, in the order of the requests: a JSON line `{"id": N, "segments": [{"start", "end", "text",
///   "avg_logprob", "no_speech_prob", "compression_ratio", "tokens", "words": [{"start", "end", "word",
///   "probability"}]}], "cpu_s": S, "context_chars": C, "window": W, "redecoded": BOOL}` (C: the characters of the
///   context's earlier text it was given; W the window its text was read in, `redecoded` whether a short one was
///   read again), or `{"id": N, "error": "..."}`;
/// - standard input closed: the process exits 0.
enum WhisperWorkerScript {
    static let source = #"""
        import json, os, re, resource, sys, traceback
        os.environ.setdefault("HF_HUB_OFFLINE", "1")

        def cpu():
            r = resource.getrusage(resource.RUSAGE_SELF)
            return r.ru_utime + r.ru_stime

        def say(obj):
            sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
            sys.stdout.flush()

        def main():
            model_dir, compute, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
            try:
                import numpy as np
                from faster_whisper import WhisperModel
                t0 = cpu()
                model = WhisperModel(model_dir, device="cpu", compute_type=compute, cpu_threads=threads,
                                     num_workers=1, local_files_only=True)
            except Exception as e:
                say({"error": "%s: %s" % (type(e).__name__, e)})
                sys.exit(1)
            say({"ready": True, "load_s": round(cpu() - t0, 3), "multilingual": model.model.is_multilingual})
            # The encoder's window: faster-whisper pads every window's features to 30 s (3,000 frames) with
            # pad_or_trim; CTranslate2's encoder reads any length up to that.
            import faster_whisper.transcribe as fwt
            frames = [3000]
            pad = getattr(fwt, "pad_or_trim", None)
            if pad is not None:
                fwt.pad_or_trim = lambda array, length=3000, *, axis=-1: pad(array, frames[0], axis=axis)

            def read(audio, request, prompt, window, cap):
                frames[0] = int(round(window * 100))
                try:
                    segments, _ = model.transcribe(
                        audio, language=request.get("language"), beam_size=int(request.get("beam", 5)),
                        word_timestamps=bool(request.get("words", True)), initial_prompt=prompt,
                        hotwords=request.get("hotwords"), condition_on_previous_text=False, vad_filter=False,
                        max_new_tokens=cap)
                    return list(segments)
                finally:
                    frames[0] = 3000

            # A short window's reading that may have gone wrong: Whisper, given a short window of noise (clicks,
            # tones), loops ("Q-E-A6, Q-E-A6, ..."), where the 30 s window's silence after the audio stops it.
            # Doubtful: nothing read (faster-whisper drops a likely no-speech), a retry at a higher temperature, a
            # repeating text (a compression ratio above 2, or a loop too short for it: something said four times
            # running, "N-N-N-N", or 8 characters or more twice), a likely no-speech, times past the audio, more
            # than 5 words a second, or the token cap reached.
            loop = re.compile(r"(.+?)\1{3,}|(.{8,})\2")

            def doubtful(segments, seconds, cap):
                text = "".join(s.text for s in segments).strip().lower()
                if loop.search(text):
                    return True
                words = sum(len(s.words or []) for s in segments)
                tokens = sum(len(s.tokens) + 2 for s in segments)
                return (not segments or any(s.temperature > 0 or s.compression_ratio > 2.0 or s.no_speech_prob > 0.5
                            or s.end > seconds + 0.5 for s in segments)
                        or words > 2 + 5 * seconds or tokens >= cap - 2)

            # The earlier text as a prompt, with its digits as words: Whisper writes the way the text before reads,
            # and a context that wrote digits said one by one as a number ("Enter 9169.", "90210.") writes the next
            # such string so too, which a reader (and wer.py) reads as "nine thousand one hundred ...", not what was
            # said; given "nine, one, six, nine" before, it writes "nine, one, six, nine".
            digit_words = "zero one two three four five six seven eight nine".split()
            # Whole digit runs only: "2nd", "12th", "MP3" and "x86" stay as they are.
            digits = re.compile(r"(?<![\dA-Za-z])\d+(?![\dA-Za-z])")

            def spoken(text):
                return digits.sub(lambda m: ", ".join(digit_words[int(c)] for c in m.group()), text)

            stdin = sys.stdin.buffer
            contexts = {}
            while True:
                line = stdin.readline()
                if not line:
                    return
                request = json.loads(line)
                count = int(request["samples"])
                data = stdin.read(2 * count)
                if len(data) != 2 * count:
                    return
                t0 = cpu()
                try:
                    audio = np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0
                    context = request.get("context")
                    prompt = request.get("prompt")
                    before = contexts.get(context) if context is not None else None
                    if before:
                        prompt = (prompt + " " + spoken(before)) if prompt else spoken(before)
                    seconds = count / 16000.0
                    window = min(30.0, float(request.get("window") or 30))
                    redecoded = False
                    if pad is not None and window < 30 and seconds <= window - 10:
                        cap = int(24 + 12 * seconds)
                        try:
                            segments = read(audio, request, prompt, window, cap)
                        except ValueError:
                            segments = []  # a prompt too long for the cap: read again, in the 30 s window
                        if doubtful(segments, seconds, cap):
                            segments, window, redecoded = read(audio, request, prompt, 30, None), 30.0, True
                    else:
                        segments, window = read(audio, request, prompt, 30, None), 30.0
                    if context is not None:
                        if any(s.temperature > 0.5 or s.compression_ratio > 2.4 for s in segments):
                            text = ""
                        else:
                            text = ((before or "") + "".join(s.text for s in segments))[-1000:]
                        contexts.pop(context, None)
                        contexts[context] = text
                        while len(contexts) > 256:
                            contexts.pop(next(iter(contexts)))
                    out = []
                    for s in segments:
                        words = [{"start": round(w.start, 3), "end": round(w.end, 3), "word": w.word,
                                  "probability": round(w.probability, 4)} for w in (s.words or [])]
                        out.append({"start": round(s.start, 3), "end": round(s.end, 3), "text": s.text,
                                    "avg_logprob": s.avg_logprob, "no_speech_prob": s.no_speech_prob,
                                    "compression_ratio": s.compression_ratio, "tokens": len(s.tokens),
                                    "words": words})
                    say({"id": request["id"], "segments": out, "cpu_s": round(cpu() - t0, 4),
                         "context_chars": len(before or ""), "window": window, "redecoded": redecoded})
                except Exception as e:
                    traceback.print_exc(file=sys.stderr)
                    say({"id": request["id"], "error": "%s: %s" % (type(e).__name__, e)})

        main()
        """#
}
