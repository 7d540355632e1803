@_exported import SpeechGraphAudio
@_exported import SpeechGraphCore
@_exported import SpeechGraphJACK
@_exported import SpeechGraphLM
@_exported import SpeechGraphSinks
@_exported import SpeechGraphSphinx
@_exported import SpeechGraphVAD
@_exported import SpeechGraphWeb

/// Every node type that ships with speechgraph.
public enum BuiltinNodes {
    public static let types: [NodeType] = [
        FileInputNode.type,
        PushInputNode.type,
        ResampleNode.type,
        DownmixNode.type,
        LevelTapNode.type,
        RecordTapNode.type,
        RecognizerNode.type,
        ConsoleSink.type,
        JSONLinesSink.type,
        SubtitleSink.srt,
        SubtitleSink.vtt,
        TextSink.type,
        ClipsSink.type,
        WyomingSink.type,
        WebSink.type,
        JackInputNode.type,
        JackOutputNode.type,
        VADNode.type,
    ]

    /// A registry holding every built-in node type.
    public static func registry() -> NodeRegistry {
        var registry = NodeRegistry()
        for type in types {
            // Built-in names are unique by construction; a clash is a programming error caught by tests.
            try! registry.register(type)
        }
        return registry
    }
}
