// The library product for apps: `import SpeechGraph` gives the runtime (RunningGraph, the graph language,
// the planner, events), every built-in node type (BuiltinNodes.registry()) and plugin loading (PluginCatalog),
// without the CLI.
@_exported import SpeechGraphNodes
@_exported import SpeechGraphPlugins
