// The library product for apps: `import SpeechGraph` gives the runtime (RunningGraph, the graph language,
// the planner, events) and every built-in node type (BuiltinNodes.registry()), without the CLI.
@_exported import SpeechGraphNodes
