import CBenchGate
import CSpeechGraphPlugin
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `plugin-gate PLUGIN`: the gate's cost per block (256 frames at 48 kHz, mono: a JACK period) loaded from
/// PLUGIN (the plugin, called through its class's function pointer, as the process callback calls it)
/// against the same source compiled into this program and called directly. Runs alternate in order, median of 31.
func gateCost(plugin path: String) {
    guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL), let symbol = dlsym(handle, SG_PLUGIN_ENTRY_SYMBOL),
        let plugin = unsafeBitCast(symbol, to: sg_plugin_entry_fn.self)(), let classes = plugin.pointee.node_classes,
        let loaded = classes[0]
    else { fail("\(path): not the gate plugin") }
    let builtin = bench_builtin_gate()!
    let frames: UInt32 = 256
    let blocks = 20000
    let input = UnsafeMutablePointer<Float>.allocate(capacity: Int(frames))
    let output = UnsafeMutablePointer<Float>.allocate(capacity: Int(frames))
    // Speech-like: bursts above the threshold and quiet between them, so the gate opens and closes.
    for i in 0..<Int(frames) { input[i] = (i / 64) % 2 == 0 ? 0.3 * sinf(Float(i) * 0.2) : 0.0001 }

    func make(_ cls: UnsafePointer<sg_node_class>) -> UnsafeMutableRawPointer {
        var config = sg_config()
        var error = [CChar](repeating: 0, count: 256)
        var host = sg_host()
        guard let node = cls.pointee.create(&host, &config, &error, 256) else { fail("the gate refused to start") }
        var setup = sg_audio_setup(sample_rate: 48000, input_channels: 1, output_channels: 1, max_frames: frames)
        _ = cls.pointee.prepare(node, &setup, &error, 256)
        return node
    }
    let a = make(loaded)
    let b = make(builtin)
    let process = loaded.pointee.process!
    // Both through their class's function pointer, as the process callback calls a real-time processor.
    let builtinProcess = builtin.pointee.process!
    func time(_ body: () -> Void) -> Double {
        let start = monotonic()
        body()
        return (monotonic() - start) / Double(blocks) * 1e9
    }
    var pluginNs: [Double] = []
    var builtinNs: [Double] = []
    // Alternating which goes first, after a warm-up of each.
    for round in -2..<31 {
        let p = { time { for _ in 0..<blocks { process(a, input, output, frames) } } }
        let q = { time { for _ in 0..<blocks { builtinProcess(b, input, output, frames) } } }
        let (x, y) =
            round % 2 == 0
            ? (p(), q())
            : ({
                let y = q()
                return (p(), y)
            })()
        if round >= 0 {
            pluginNs.append(x)
            builtinNs.append(y)
        }
    }
    func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
    let p = median(pluginNs)
    let q = median(builtinNs)
    let ratios = zip(pluginNs, builtinNs).map { $0 / $1 }
    print(String(format: "gate_plugin_per_block %.0f ns", p))
    print(String(format: "gate_builtin_per_block %.0f ns", q))
    print(String(format: "gate_plugin_vs_builtin %.3f x", median(ratios)))
    print(String(format: "gate_plugin_per_block_share_of_period %.4f %%", p / (Double(frames) / 48000 * 1e9) * 100))
}
