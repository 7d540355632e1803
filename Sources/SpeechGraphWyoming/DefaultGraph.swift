import SpeechGraphCore

extension WyomingServer {
    /// The graph each transcription runs unless the server is given another: graphs/wyoming.graph, built in (a
    /// test keeps the two the same).
    public static let defaultGraph = """
        # wyoming.graph: what `speechgraph serve --wyoming` runs for each transcription a client asks \
        for (docs/wyoming.md).
        # Copy it, change it, and serve it with --graph FILE (or offer it beside the default with --model NAME=FILE):
        # a domain language model is `lm: "my.lmspec"` on the recognizer, a grammar `grammar: "commands.jsgf"`.
        #
        # The server sets the input's rate and channels from the client's audio-start (the planner converts to 16 kHz
        # mono), the vad's pauses from the request's vad_sensitivity, and the recognizer's phrases from its
        # transcript_names and transcript_terms.

        node input  = push.input { buffer: 30 s }
        # The end of a command: 400 ms of silence (vad_sensitivity relaxed: 800 ms, aggressive: 200 ms).
        # Nobody speaks in the first 8 s (a false wake word): an empty transcript then, not at audio-stop.
        node vad    = vad { min-silence: 400 ms, hangover: 400 ms, no-speech: 8 s }
        # Streaming, its normalisation learnt from the first second of each utterance. When the command ends,
        # the second pass searches the words heard again, normalised as the whole command is (graphs/wyoming-fast.graph
        # skips it: answers sooner, more errors). No word timings and confidences (words: false): the protocol
        # carries text.
        node asr    = recognizer { mode: streaming, lookahead: 1000 ms, second-pass: true, words: false }
        node client = wyoming

        input      -> vad.in
        vad.out    -> asr.in
        vad.events -> asr.control
        vad.events -> client
        asr        -> client
        """
}
