// Shared machinery of the two text protocols (NMEA 0183 and watch-link): `$…*HH` CR LF lines found in
// a byte stream, their checksums, comma-separated fields and numbers parsed straight from the bytes.

enum ASCII {
    static let dollar = UInt8(ascii: "$")
    static let star = UInt8(ascii: "*")
    static let comma = UInt8(ascii: ",")
    static let dot = UInt8(ascii: ".")
    static let minus = UInt8(ascii: "-")
    static let plus = UInt8(ascii: "+")
    static let cr = UInt8(ascii: "\r")
    static let lf = UInt8(ascii: "\n")
    static let zero = UInt8(ascii: "0")

    /// The value of a hexadecimal digit (either case), or nil.
    @inline(__always)
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte &- UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte &- UInt8(ascii: "A") &+ 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte &- UInt8(ascii: "a") &+ 10
        default: nil
        }
    }
}

/// How a line's body fared with its protocol.
enum LineOutcome {
    case decoded
    case malformed
    case unknown
    case unsupportedVersion
}

/// Finds `$…*HH` lines in `bytes`, checks them and hands each body (the bytes strictly between `$`
/// and `*`, checksum verified) to `handle`. Returns how many bytes it consumed: a line not yet ended
/// is left for the next chunk unless it already exceeds `maxLength` bytes (`$` to LF), in which case
/// it is dropped and counted.
///
/// A line ends at LF (an optional CR before it is part of the terminator). A `$` inside a line starts
/// a new one: the cut-off line is counted malformed. Bytes outside lines are skipped and counted.
@inline(__always)
func scanLines(
    _ bytes: UnsafeRawBufferPointer, maxLength: Int, counters: inout DecoderCounters,
    handle: (UnsafeRawBufferPointer) -> LineOutcome
) -> Int {
    let count = bytes.count
    var index = 0
    while index < count {
        guard bytes[index] == ASCII.dollar else {
            counters.resyncBytesSkipped &+= 1
            index &+= 1
            continue
        }
        let limit = min(count, index &+ maxLength)
        var end = index &+ 1
        while end < limit {
            let byte = bytes[end]
            if byte == ASCII.lf || byte == ASCII.dollar { break }
            end &+= 1
        }
        if end == limit {
            if limit - index >= maxLength {
                // No terminator within the bound: drop what we have, resync on the next `$`.
                counters.oversizedFrames &+= 1
                index = limit
                continue
            }
            return index  // the line continues in the next chunk
        }
        if bytes[end] == ASCII.dollar {
            counters.malformedFrames &+= 1  // cut short by the next line
            index = end
            continue
        }
        // `$` at dollar, LF at end; the body runs to `*HH` before the terminator.
        let dollar = index
        var stop = end
        if stop > dollar &+ 1, bytes[stop &- 1] == ASCII.cr { stop &-= 1 }
        index = end &+ 1
        guard stop &- dollar >= 4, bytes[stop &- 3] == ASCII.star,
            let high = ASCII.hexValue(bytes[stop &- 2]), let low = ASCII.hexValue(bytes[stop &- 1])
        else {
            counters.malformedFrames &+= 1
            continue
        }
        let body = UnsafeRawBufferPointer(rebasing: bytes[(dollar &+ 1)..<(stop &- 3)])
        var sum: UInt8 = 0
        for byte in body { sum ^= byte }
        guard sum == high << 4 | low else {
            counters.badChecksums &+= 1
            continue
        }
        switch handle(body) {
        case .decoded: counters.framesDecoded &+= 1
        case .malformed: counters.malformedFrames &+= 1
        case .unknown: counters.unknownMessages &+= 1
        case .unsupportedVersion: counters.unsupportedVersions &+= 1
        }
    }
    return count
}

/// Comma-separated fields of a line body, read one after the other without allocating.
struct Fields {
    let bytes: UnsafeRawBufferPointer
    private var position: Int
    private var exhausted = false

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        position = 0
    }

    /// The next field's byte range, or nil after the last field.
    @inline(__always)
    mutating func next() -> Range<Int>? {
        guard !exhausted else { return nil }
        let start = position
        var end = start
        while end < bytes.count, bytes[end] != ASCII.comma { end &+= 1 }
        if end >= bytes.count { exhausted = true }
        position = end &+ 1
        return start..<end
    }

    /// Whether every field has been read.
    var isAtEnd: Bool { exhausted }
}

/// Numbers and words parsed straight from bytes.
enum Parse {
    /// Powers of ten exactly representable as Double.
    static let powersOfTen: [Double] = (0...22).map { exponent in
        var value = 1.0
        for _ in 0..<exponent { value *= 10 }
        return value
    }

    /// A non-negative decimal integer of at most 18 digits; nil for anything else (empty included).
    @inline(__always)
    static func unsigned(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int? {
        guard !range.isEmpty, range.count <= 18 else { return nil }
        var value = 0
        for index in range {
            let digit = bytes[index] &- ASCII.zero
            guard digit < 10 else { return nil }
            value = value &* 10 &+ Int(digit)
        }
        return value
    }

    /// A fixed-point decimal `[sign]digits[.digits]`: the integer part and the fraction (0 ≤ f < 1);
    /// at most 18 digits on each side; nil for anything else (empty included).
    @inline(__always)
    static func fixedPoint(
        _ bytes: UnsafeRawBufferPointer, _ range: Range<Int>
    ) -> (
        negative: Bool, whole: Int, fraction: Double
    )? {
        var index = range.lowerBound
        let end = range.upperBound
        guard index < end else { return nil }
        var negative = false
        if bytes[index] == ASCII.minus || bytes[index] == ASCII.plus {
            negative = bytes[index] == ASCII.minus
            index &+= 1
        }
        var whole = 0
        var wholeDigits = 0
        while index < end {
            let digit = bytes[index] &- ASCII.zero
            guard digit < 10 else { break }
            whole = whole &* 10 &+ Int(digit)
            wholeDigits &+= 1
            index &+= 1
        }
        guard wholeDigits <= 18 else { return nil }
        var fraction = 0.0
        if index < end {
            guard bytes[index] == ASCII.dot else { return nil }
            index &+= 1
            var digits = 0
            var value = 0
            while index < end {
                let digit = bytes[index] &- ASCII.zero
                guard digit < 10 else { return nil }
                value = value &* 10 &+ Int(digit)
                digits &+= 1
                index &+= 1
            }
            guard digits <= 18, wholeDigits > 0 || digits > 0 else { return nil }
            fraction = Double(value) / powersOfTen[digits]
        } else if wholeDigits == 0 {
            return nil
        }
        return (negative, whole, fraction)
    }

    /// A decimal number `[sign]digits[.digits]`; nil for anything else (empty included).
    @inline(__always)
    static func decimal(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Double? {
        guard let (negative, whole, fraction) = fixedPoint(bytes, range) else { return nil }
        let value = Double(whole) + fraction
        return negative ? -value : value
    }

    /// Up to 8 bytes packed big-endian into an integer, to compare words without allocating; nil when
    /// longer.
    @inline(__always)
    static func word(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> UInt64? {
        guard range.count <= 8 else { return nil }
        var value: UInt64 = 0
        for index in range { value = value << 8 | UInt64(bytes[index]) }
        return value
    }

    /// `text` packed as `word` packs bytes (at most 8 ASCII characters).
    static func word(_ text: StaticString) -> UInt64 {
        var value: UInt64 = 0
        text.withUTF8Buffer { buffer in
            for byte in buffer.prefix(8) { value = value << 8 | UInt64(byte) }
        }
        return value
    }
}
