import Foundation
import WorkoutModel

// The store's JSON columns written by hand for the types every saved workout writes (metadata, configurations,
// counters): JSONEncoder builds a tree of boxed values per call, ≈6 % of an Apple Health import's CPU. The text is
// the text `JSON.encode` wrote through JSONEncoder (pinned by JSONTextTests against JSONEncoder): keys in UTF-8
// byte order (`.sortedKeys` off Apple platforms), numbers as `description` without a trailing ".0", "/" and control
// characters escaped, other characters as UTF-8, non-finite numbers and dates as the strings "+inf", "-inf", "nan",
// dates as seconds since 2001 (`.deferredToDate`), metadata values in their typed form (`{"int":28}`). A property
// added to WorkoutConfiguration or IngestCounters must be written here too (JSONTextTests fails until it is listed).
extension JSON {
    /// `metadata` as JSONEncoder writes it in the typed form (`MetadataValue.typedCoding`).
    package static func encode(_ metadata: Metadata) -> String {
        var text = JSONText(capacity: 16 + metadata.count * 48)
        text.append(metadata)
        return text.string
    }

    package static func encode(_ configuration: WorkoutConfiguration) -> String {
        var text = JSONText(capacity: 112)
        text.append(configuration)
        return text.string
    }

    package static func encode(_ counters: IngestCounters) -> String {
        var text = JSONText(capacity: 32 + counters.dropped.count * 24)
        text.append(counters)
        return text.string
    }
}

/// JSON text being written, as JSONEncoder (`.sortedKeys`) writes it for `JSON.encode`.
struct JSONText {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    var string: String { String(decoding: bytes, as: UTF8.self) }

    mutating func append(_ metadata: Metadata) {
        bytes.append(UInt8(ascii: "{"))
        var first = true
        for (key, value) in Self.sorted(metadata) {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            append(string: key)
            bytes.append(UInt8(ascii: ":"))
            append(value)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    /// The typed form: `{"kind":value}`.
    mutating func append(_ value: MetadataValue) {
        switch value {
        case .string(let string):
            append(raw: #"{"string":"#)
            append(string: string)
        case .double(let double):
            append(raw: #"{"double":"#)
            append(number: double)
        case .int(let int):
            append(raw: #"{"int":"#)
            append(raw: int.description)
        case .bool(let bool):
            append(raw: bool ? #"{"bool":true"# : #"{"bool":false"#)
        case .date(let date):
            append(raw: #"{"date":"#)
            append(number: date.timeIntervalSinceReferenceDate)
        case .quantity(let quantity):
            append(raw: #"{"quantity":"#)
            append(quantity)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    mutating func append(_ quantity: Quantity) {
        append(raw: #"{"unit":"#)
        append(string: quantity.unit.symbol)
        append(raw: #","value":"#)
        append(number: quantity.value)
        bytes.append(UInt8(ascii: "}"))
    }

    /// Synthesised Codable: `lapLength` only when present.
    mutating func append(_ configuration: WorkoutConfiguration) {
        append(raw: #"{"activityType":"#)
        append(string: configuration.activityType.rawValue)
        if let lapLength = configuration.lapLength {
            append(raw: #","lapLength":"#)
            append(lapLength)
        }
        append(raw: #","locationType":"#)
        append(string: configuration.locationType.rawValue)
        append(raw: #","swimmingLocationType":"#)
        append(string: configuration.swimmingLocationType.rawValue)
        bytes.append(UInt8(ascii: "}"))
    }

    /// Synthesised Codable; `dropped` keyed by the reasons' raw values.
    mutating func append(_ counters: IngestCounters) {
        append(raw: #"{"accepted":"#)
        append(raw: counters.accepted.description)
        append(raw: #","dropped":{"#)
        let dropped = counters.dropped.map { ($0.key.rawValue, $0.value) }.sorted { Self.precedes($0.0, $1.0) }
        for (index, (reason, count)) in dropped.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            append(string: reason)
            bytes.append(UInt8(ascii: ":"))
            append(raw: count.description)
        }
        append(raw: "}}")
    }

    /// JSONEncoder's number: `description` without a trailing ".0" (1.0 → 1, 1e-07, 1e+16, -0.0 → -0); a
    /// non-finite one as the strings `JSON.encode` configures.
    mutating func append(number value: Double) {
        guard value.isFinite else {
            append(raw: value.isNaN ? #""nan""# : value > 0 ? #""+inf""# : #""-inf""#)
            return
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        append(raw: text)
    }

    /// A string as JSONEncoder escapes it: `"`, `\` and `/` with a backslash, \b \f \n \r \t, the other
    /// controls below 0x20 as \u00xx (lower-case hex); everything else as its UTF-8 bytes.
    mutating func append(string value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var mark = 0
            for index in utf8.indices {
                let byte = utf8[index]
                let escape: UInt8
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): escape = byte
                case 0x08: escape = UInt8(ascii: "b")
                case 0x0C: escape = UInt8(ascii: "f")
                case 0x0A: escape = UInt8(ascii: "n")
                case 0x0D: escape = UInt8(ascii: "r")
                case 0x09: escape = UInt8(ascii: "t")
                case 0x00..<0x20: escape = UInt8(ascii: "u")
                default: continue
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[mark..<index]))
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(escape)
                if escape == UInt8(ascii: "u") {
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    bytes.append(contentsOf: [
                        UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)],
                    ])
                }
                mark = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[mark...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Text that needs no escaping (numbers, the fixed parts).
    private mutating func append(raw text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// JSONEncoder's key order off Apple platforms: the keys' UTF-8 bytes, lexicographically (memcmp: the
    /// generic `utf8.lexicographicallyPrecedes` cost 45,000 instructions a metadata dictionary).
    static func precedes(_ a: String, _ b: String) -> Bool {
        var a = a
        var b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in
                let common = min(x.count, y.count)
                if common > 0, let p = x.baseAddress, let q = y.baseAddress {
                    let order = memcmp(p, q, common)
                    if order != 0 { return order < 0 }
                }
                return x.count < y.count
            }
        }
    }

    private static func sorted(_ metadata: Metadata) -> [(key: String, value: MetadataValue)] {
        metadata.sorted { precedes($0.key, $1.key) }
    }
}
