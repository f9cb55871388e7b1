/// Streaming decoder of the watch-link protocol (docs/watch-link.md): `$WL<version>,<TYPE>,…*HH` lines.
///
/// Lines with a bad checksum are dropped and counted; a line of another version (`$WL2,…`) is counted
/// in `unsupportedVersions` and dropped; other `$…` lines (NMEA on the wrong port) and unknown types
/// are counted as unknown; a line with the wrong number of fields or an unparsable one is malformed.
/// A line longer than `maxLineLength` bytes is dropped and counted.
///
/// Every reading carries the line's milliseconds as `SensorTime.watchMilliseconds` (for `LEN` and `STK`
/// the end of the interval). `GATT` lines are decoded by the GATT parsers into the same readings as
/// other sensors' (heart rate, speed and cadence, stride, power), with source `.watchLinkGATT`; the
/// speed and cadence state is a `GATT.Session` whose stop clock is the lines' milliseconds.
public struct WatchLinkDecoder: SensorDecoder {
    /// Longest line kept, `$` to LF (16 to 65,536).
    public let maxLineLength: Int
    public private(set) var counters = DecoderCounters()
    /// The state behind tunnelled speed and cadence values.
    public var gatt: GATT.Session
    private var carry = CarryBuffer()

    private static let hello = Parse.word("HELLO")
    private static let length = Parse.word("LEN")
    private static let strokes = Parse.word("STK")
    private static let button = Parse.word("BTN")
    private static let distance = Parse.word("DST")
    private static let gattType = Parse.word("GATT")
    private static let version = Parse.word("1")

    public init(maxLineLength: Int = 256, gatt: GATT.Session = GATT.Session()) {
        self.maxLineLength = min(max(16, maxLineLength), 1 << 16)
        self.gatt = gatt
    }

    /// Bytes of a line not yet complete.
    public var pendingByteCount: Int { carry.bytes.count }

    public mutating func decode(_ chunk: UnsafeRawBufferPointer, into readings: inout [SensorReading]) {
        var counts = counters
        counts.bytesConsumed &+= chunk.count
        var carry = CarryBuffer()
        swap(&carry, &self.carry)
        let maxLength = maxLineLength
        carry.feed(chunk) { bytes in
            scanLines(bytes, maxLength: maxLength, counters: &counts) { body in
                line(body, into: &readings)
            }
        }
        swap(&carry, &self.carry)
        counters = counts
    }

    public mutating func connectionLost() {
        counters.bytesDroppedOnDisconnect &+= carry.removeAll()
        gatt.restart()
    }

    private mutating func line(_ body: UnsafeRawBufferPointer, into readings: inout [SensorReading]) -> LineOutcome {
        var fields = Fields(body)
        guard let protocolField = fields.next(), protocolField.count >= 2,
            body[protocolField.lowerBound] == UInt8(ascii: "W"),
            body[protocolField.lowerBound &+ 1] == UInt8(ascii: "L")
        else { return .unknown }
        guard Parse.word(body, (protocolField.lowerBound &+ 2)..<protocolField.upperBound) == Self.version else {
            return .unsupportedVersion
        }
        guard let typeField = fields.next() else { return .malformed }
        switch Parse.word(body, typeField) {
        case Self.hello:
            guard let name = fields.next(), fields.isAtEnd else { return .malformed }
            let device = String(decoding: UnsafeRawBufferPointer(rebasing: body[name]), as: UTF8.self)
            readings.append(SensorReading(source: .watchLink, value: .hello(device: device)))
        case Self.length:
            guard let endField = fields.next(), let durationField = fields.next(), let kindField = fields.next(),
                let styleField = fields.next(), let strokesField = fields.next(), fields.isAtEnd,
                let end = Parse.unsigned(body, endField), let duration = Parse.unsigned(body, durationField),
                kindField.count == 1
            else { return .malformed }
            let kind: WatchLink.LengthKind
            switch body[kindField.lowerBound] {
            case UInt8(ascii: "A"): kind = .active
            case UInt8(ascii: "D"): kind = .drill
            case UInt8(ascii: "R"): kind = .rest
            default: return .malformed
            }
            guard let style = Self.style(body, styleField), let strokes = Self.optionalCount(body, strokesField) else {
                return .malformed
            }
            readings.append(
                SensorReading(
                    source: .watchLink, time: .watchMilliseconds(end),
                    value: .swimLength(
                        SwimLength(
                            endMilliseconds: end, durationMilliseconds: duration, kind: kind, style: style,
                            strokes: strokes))))
        case Self.strokes:
            guard let endField = fields.next(), let durationField = fields.next(), let countField = fields.next(),
                fields.isAtEnd, let end = Parse.unsigned(body, endField),
                let duration = Parse.unsigned(body, durationField), let count = Parse.unsigned(body, countField)
            else { return .malformed }
            readings.append(
                SensorReading(
                    source: .watchLink, time: .watchMilliseconds(end),
                    value: .strokes(StrokeCount(endMilliseconds: end, durationMilliseconds: duration, count: count))))
        case Self.distance:
            guard let endField = fields.next(), let durationField = fields.next(), let metresField = fields.next(),
                fields.isAtEnd, let end = Parse.unsigned(body, endField),
                let duration = Parse.unsigned(body, durationField), let metres = Parse.decimal(body, metresField),
                metres.isFinite, metres >= 0
            else { return .malformed }
            readings.append(
                SensorReading(
                    source: .watchLink, time: .watchMilliseconds(end),
                    value: .distance(
                        WatchDistance(endMilliseconds: end, durationMilliseconds: duration, meters: metres))))
        case Self.button:
            guard let timeField = fields.next(), let buttonField = fields.next(), fields.isAtEnd,
                let time = Parse.unsigned(body, timeField)
            else { return .malformed }
            let button: WatchLink.Button
            switch Parse.word(body, buttonField) {
            case Self.lap: button = .lap
            case Self.next: button = .next
            case Self.pause: button = .pause
            case Self.resume: button = .resume
            case Self.stop: button = .stop
            default: return .malformed
            }
            readings.append(SensorReading(source: .watchLink, time: .watchMilliseconds(time), value: .button(button)))
        case Self.gattType:
            guard let timeField = fields.next(), let uuidField = fields.next(), let payloadField = fields.next(),
                fields.isAtEnd, let time = Parse.unsigned(body, timeField), uuidField.count == 4,
                payloadField.count % 2 == 0
            else { return .malformed }
            var uuid: UInt16 = 0
            for index in uuidField {
                guard let digit = ASCII.hexValue(body[index]) else { return .malformed }
                uuid = uuid << 4 | UInt16(digit)
            }
            guard GATT.isSupported(uuid) else { return .unknown }
            let size = payloadField.count / 2
            let value: SensorReading.Value?? = withUnsafeTemporaryAllocation(byteCount: max(size, 1), alignment: 1) {
                buffer in
                var offset = payloadField.lowerBound
                for index in 0..<size {
                    guard let high = ASCII.hexValue(body[offset]), let low = ASCII.hexValue(body[offset &+ 1]) else {
                        return nil
                    }
                    buffer[index] = high << 4 | low
                    offset &+= 2
                }
                let payload = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[0..<size])
                return .some(gatt.reading(characteristic: uuid, payload: payload, milliseconds: time))
            }
            guard let decoded = value, let decoded else { return .malformed }
            readings.append(
                SensorReading(
                    source: .watchLinkGATT(characteristic: uuid), time: .watchMilliseconds(time), value: decoded))
        default:
            return .unknown
        }
        return .decoded
    }

    private static let lap = Parse.word("LAP")
    private static let next = Parse.word("NEXT")
    private static let pause = Parse.word("PAUSE")
    private static let resume = Parse.word("RESUME")
    private static let stop = Parse.word("STOP")

    /// A stroke style, or `.some(nil)` for `-`; nil when unparsable.
    private static func style(_ body: UnsafeRawBufferPointer, _ range: Range<Int>) -> WatchLink.Style?? {
        switch Parse.word(body, range) {
        case Parse.word("-"): .some(nil)
        case Parse.word("FR"): .freestyle
        case Parse.word("BK"): .backstroke
        case Parse.word("BR"): .breaststroke
        case Parse.word("FL"): .butterfly
        case Parse.word("MX"): .mixed
        default: nil
        }
    }

    /// A count, or `.some(nil)` for `-`; nil when unparsable.
    private static func optionalCount(_ body: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int?? {
        if range.count == 1, body[range.lowerBound] == ASCII.minus { return .some(nil) }
        guard let value = Parse.unsigned(body, range) else { return nil }
        return value
    }
}
