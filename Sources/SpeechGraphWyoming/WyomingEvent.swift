import Foundation
import NIOCore

/// A JSON value, as a Wyoming event's data holds them.
public indirect enum JSONValue: Sendable, Equatable, Codable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let n = try? c.decode(Double.self) {
            self = .number(n)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .number(let n): if let i = integer { try c.encode(i) } else { try c.encode(n) }
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }

    /// Parses a JSON object; `nil` when the bytes are not one.
    static func object(from bytes: some Sequence<UInt8>) -> [String: JSONValue]? {
        try? JSONDecoder().decode([String: JSONValue].self, from: Data(bytes))
    }

    static func encoded(_ object: [String: JSONValue]) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(object)) ?? Data("{}".utf8)
    }

    public var string: String? { if case .string(let s) = self { s } else { nil } }
    /// A whole number (a JSON number with no fraction).
    public var integer: Int? {
        guard case .number(let n) = self, n == n.rounded(), abs(n) < 1e15 else { return nil }
        return Int(n)
    }
    public var strings: [String]? {
        guard case .array(let a) = self else { return nil }
        return a.compactMap(\.string)
    }
}

/// One Wyoming event: a type, its data (the header's `data` merged with the `data_length` bytes after it), and
/// an optional payload (audio).
public struct WyomingEvent: Sendable {
    public var type: String
    public var data: [String: JSONValue]
    public var payload: ByteBuffer?

    public init(_ type: String, _ data: [String: JSONValue] = [:], payload: ByteBuffer? = nil) {
        self.type = type
        self.data = data
        self.payload = payload
    }

    /// The protocol version speechgraph speaks (the `wyoming` package's it was tested with).
    public static let protocolVersion = "1.10.2"

    /// The event on the wire: the header line, the data bytes (`data_length`), the payload.
    public func write(into buffer: inout ByteBuffer) {
        var header: [String: JSONValue] = ["type": .string(type), "version": .string(Self.protocolVersion)]
        var dataBytes: Data?
        if !data.isEmpty {
            let bytes = JSONValue.encoded(data)
            dataBytes = bytes
            header["data_length"] = .number(Double(bytes.count))
        }
        if let payload, payload.readableBytes > 0 { header["payload_length"] = .number(Double(payload.readableBytes)) }
        buffer.writeBytes(JSONValue.encoded(header))
        buffer.writeInteger(UInt8(ascii: "\n"))
        if let dataBytes { buffer.writeBytes(dataBytes) }
        if var payload { buffer.writeBuffer(&payload) }
    }

    static func error(_ text: String, code: String) -> WyomingEvent {
        WyomingEvent("error", ["text": .string(text), "code": .string(code)])
    }
}

/// How large a client's frames may be: anything larger is refused before it is read.
public struct WyomingLimits: Sendable {
    /// The JSON header line, newline excluded.
    public var headerBytes = 64 * 1024
    /// The data after the header (`data_length`).
    public var dataBytes = 64 * 1024
    /// The payload (`payload_length`): 4 MiB holds more than 10 s of 48 kHz stereo 16-bit audio.
    public var payloadBytes = 4 * 1024 * 1024

    public init() {}
}

/// A frame the protocol cannot read: the connection gets an `error` event and is closed (its framing is lost).
struct WyomingFrameError: Error, CustomStringConvertible {
    var code: String
    var description: String
}

/// Splits the byte stream into Wyoming events, refusing oversized or malformed frames before buffering them.
struct WyomingFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = WyomingEvent

    let limits: WyomingLimits
    private var header: (type: String, data: [String: JSONValue], dataLength: Int, payloadLength: Int)?

    init(limits: WyomingLimits) { self.limits = limits }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        if header == nil {
            let view = buffer.readableBytesView
            guard let newline = view.firstIndex(of: UInt8(ascii: "\n")) else {
                if buffer.readableBytes > limits.headerBytes { throw Self.tooLong(limits) }
                return .needMoreData
            }
            let length = newline - view.startIndex
            if length > limits.headerBytes { throw Self.tooLong(limits) }
            let line = buffer.readBytes(length: length) ?? []
            buffer.moveReaderIndex(forwardBy: 1)
            header = try Self.parseHeader(line, limits: limits)
        }
        guard let h = header else { return .needMoreData }
        guard buffer.readableBytes >= h.dataLength + h.payloadLength else { return .needMoreData }
        var data = h.data
        if h.dataLength > 0 {
            let bytes = buffer.readBytes(length: h.dataLength) ?? []
            guard let object = JSONValue.object(from: bytes) else {
                throw WyomingFrameError(code: "bad-data", description: "the event's data is not a JSON object")
            }
            data.merge(object) { $1 }
        }
        let payload = h.payloadLength > 0 ? buffer.readSlice(length: h.payloadLength) : nil
        header = nil
        context.fireChannelRead(wrapInboundOut(WyomingEvent(h.type, data, payload: payload)))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws
        -> DecodingState
    {
        // A half frame at the end of the stream is dropped: the client has gone.
        while try decode(context: context, buffer: &buffer) == .continue {}
        buffer.moveReaderIndex(to: buffer.writerIndex)
        return .needMoreData
    }

    private static func tooLong(_ limits: WyomingLimits) -> WyomingFrameError {
        WyomingFrameError(
            code: "header-too-long", description: "an event's header line is longer than \(limits.headerBytes) bytes")
    }

    private static func parseHeader(_ line: [UInt8], limits: WyomingLimits) throws -> (
        type: String, data: [String: JSONValue], dataLength: Int, payloadLength: Int
    ) {
        guard let object = JSONValue.object(from: line) else {
            throw WyomingFrameError(code: "bad-header", description: "an event's header line is not a JSON object")
        }
        guard let type = object["type"]?.string, !type.isEmpty else {
            throw WyomingFrameError(code: "bad-header", description: "an event's header has no 'type'")
        }
        var data: [String: JSONValue] = [:]
        if let d = object["data"], d != .null {
            guard case .object(let o) = d else {
                throw WyomingFrameError(code: "bad-header", description: "an event's 'data' is not a JSON object")
            }
            data = o
        }
        func length(_ key: String, limit: Int) throws -> Int {
            guard let value = object[key], value != .null else { return 0 }
            guard let n = value.integer, n >= 0 else {
                throw WyomingFrameError(code: "bad-header", description: "'\(key)' is not a whole number of bytes")
            }
            guard n <= limit else {
                throw WyomingFrameError(
                    code: "too-large", description: "'\(key)' \(n) is more than the server takes (\(limit) bytes)")
            }
            return n
        }
        return (
            type, data, try length("data_length", limit: limits.dataBytes),
            try length("payload_length", limit: limits.payloadBytes)
        )
    }
}
