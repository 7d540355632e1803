import Testing

/// The tiers of the test suite, as the testing library's tags: every test has one, from its own tags or its suite's
/// (scripts/tests-by-tag.py picks the first of realtime, jack, fast, model; untagged is model). `make test-fast` runs
/// the fast tier; `make test` runs every tier, the jack and realtime ones in processes of their own beside the rest
/// (scripts/test.sh).
extension Tag {
    /// Needs no PocketSphinx model, no JACK server, no corpus, no browser: seconds after the build.
    @Tag public static var fast: Self
    /// Decodes speech with the real model, runs the binary, or reads the shared corpus.
    @Tag public static var model: Self
    /// Starts a private `jackd -d dummy` (one process for them all: the suite is serialized).
    @Tag public static var jack: Self
    /// Spends its time waiting on the clock: audio played in real time, a timeout.
    @Tag public static var realtime: Self
}
