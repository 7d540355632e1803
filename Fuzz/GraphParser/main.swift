// libFuzzer target over the graph language: any bytes, parsed and validated against the built-in node types,
// must give a graph or located diagnostics, never a trap, a hang or unbounded memory. `make fuzz` runs it.
import Foundation
import FuzzSupport
import SpeechGraph

// libFuzzer calls the target from one thread: one planner for the whole run.
nonisolated(unsafe) private let planner = GraphPlanner(registry: BuiltinNodes.registry())

func fuzzGraphParser(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    do {
        let spec = try GraphParser.parse(text, file: "fuzz.graph", environment: ["SET": "1"])
        _ = try planner.validate(spec, overrides: [])
    } catch let error as GraphError {
        // Every diagnostic prints as one line with its location.
        for d in error.diagnostics { precondition(!d.description.contains("\n"), "a diagnostic of two lines") }
    } catch {}
    return 0
}

runFuzzer { fuzzGraphParser($0, $1) }
