/// Units a parameter value can be written in. Values are stored in the canonical unit of their
/// dimension: hertz, seconds, decibels.
public enum QuantityUnit: String, Sendable, CaseIterable {
    case hertz = "Hz"
    case kilohertz = "kHz"
    case seconds = "s"
    case milliseconds = "ms"
    case microseconds = "us"
    case decibels = "dB"

    public var dimension: QuantityDimension {
        switch self {
        case .hertz, .kilohertz: return .frequency
        case .seconds, .milliseconds, .microseconds: return .time
        case .decibels: return .level
        }
    }

    /// Multiply a value in this unit by this to get the canonical unit.
    public var scale: Double {
        switch self {
        case .hertz, .seconds, .decibels: return 1
        case .kilohertz: return 1000
        case .milliseconds: return 0.001
        case .microseconds: return 0.000001
        }
    }

    /// Reads a unit as written; case matters only where it must (`ms` vs `Ms` is not a thing we accept).
    public static func parse(_ text: String) -> QuantityUnit? {
        switch text {
        case "Hz", "hz": return .hertz
        case "kHz", "khz", "KHz": return .kilohertz
        case "s", "sec", "secs", "second", "seconds": return .seconds
        case "ms", "msec": return .milliseconds
        // The micro sign, or the Greek mu that looks the same.
        case "us", "usec", "µs", "\u{03BC}s": return .microseconds
        case "dB", "db", "dBFS", "dBfs": return .decibels
        default: return nil
        }
    }
}

public enum QuantityDimension: String, Sendable {
    case frequency, time, level

    public var canonicalUnit: QuantityUnit {
        switch self {
        case .frequency: return .hertz
        case .time: return .seconds
        case .level: return .decibels
        }
    }

    /// How an error message names a value of this dimension: "a frequency like '16 kHz'".
    public var example: String {
        switch self {
        case .frequency: return "a frequency like '16 kHz' or '48000 Hz'"
        case .time: return "a duration like '300 ms' or '1.5 s'"
        case .level: return "a level like '-40 dB'"
        }
    }

    public var units: [QuantityUnit] { QuantityUnit.allCases.filter { $0.dimension == self } }
}

/// Formats a canonical value in a display unit: `0.3` seconds in ms reads `300 ms`.
public func formatQuantity(_ canonical: Double, in unit: QuantityUnit) -> String {
    "\(formatNumber(canonical / unit.scale)) \(unit.rawValue)"
}
