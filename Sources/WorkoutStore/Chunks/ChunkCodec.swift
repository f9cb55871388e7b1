// The chunk codec: columns of samples or route points to bytes and back (docs/storage-chunks.md).
//
// Pure Swift with no imports, so that the fuzzer (Fuzz/Chunks) and any backend compile it alone.
// Everything a decoder reads is bounds-checked: malformed input throws `ChunkCodecError`, never traps.

/// Why bytes are not a valid chunk.
package struct ChunkCodecError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, e.g. "truncated in column start" or "unknown format tag 9".
    package var reason: String
    package init(_ reason: String) { self.reason = reason }
    package var description: String { reason }
}

/// The columns of a chunk of samples of one stream (one quantity type and source).
///
/// Every array has `count` entries except the index arrays, which are empty when their table has
/// at most one entry (every sample then uses entry 0, or none when the table is empty).
package struct SampleColumns: Sendable, Equatable {
    /// Position of each sample in its workout's accepted order; strictly increasing in a chunk.
    package var ordinals: [Int64] = []
    /// Seconds since 2001-01-01 (Date's reference), as the Double bits given.
    package var starts: [Double] = []
    package var ends: [Double] = []
    /// The value in the sample's own unit.
    package var values: [Double] = []
    /// Unit symbols used in the chunk; at least one.
    package var units: [String] = []
    /// Index into `units` per sample; empty when `units` has one entry.
    package var unitIndexes: [Int] = []
    /// Encoded metadata dictionaries (opaque bytes here); empty when no sample has metadata.
    package var metadata: [[UInt8]] = []
    /// Index into `metadata` per sample; empty when `metadata` has at most one entry.
    package var metadataIndexes: [Int] = []

    package init() {}
    package var count: Int { ordinals.count }
}

/// The columns of a chunk of route points, in insertion order.
package struct RouteColumns: Sendable, Equatable {
    package var ordinals: [Int64] = []
    package var dates: [Double] = []
    package var latitudes: [Double] = []
    package var longitudes: [Double] = []
    /// Optional values: nil where a point has none.
    package var altitudes: [Double?] = []
    package var speeds: [Double?] = []
    package var courses: [Double?] = []
    package var accuracies: [Double?] = []

    package init() {}
    package var count: Int { ordinals.count }
}

/// Encodes and decodes chunks (format tag "WKC", version 1).
package enum ChunkCodec {
    /// The magic and the newest format version this build writes and reads.
    static let magic: [UInt8] = [0x57, 0x4B, 0x43]  // "WKC"
    package static let version: UInt8 = 1
    static let sampleKind: UInt8 = 1
    static let routeKind: UInt8 = 2
    /// The most entries a chunk may hold (decoders refuse more).
    package static let maximumCount = 1 << 16

    // MARK: samples

    package static func encode(_ columns: SampleColumns) -> [UInt8] {
        var out = ByteWriter()
        out.bytes += magic
        out.bytes.append(version)
        out.bytes.append(sampleKind)
        let count = columns.count
        out.varint(UInt64(count))
        encodeOrdinals(columns.ordinals, &out)
        encodeTimes(starts: columns.starts, ends: columns.ends, &out)
        encodeColumn(columns.values, predictor: .previous, &out)
        out.varint(UInt64(columns.units.count))
        for unit in columns.units {
            let utf8 = Array(unit.utf8)
            out.varint(UInt64(utf8.count))
            out.bytes += utf8
        }
        if columns.units.count > 1 { for index in columns.unitIndexes { out.varint(UInt64(index)) } }
        out.varint(UInt64(columns.metadata.count))
        for entry in columns.metadata {
            out.varint(UInt64(entry.count))
            out.bytes += entry
        }
        if columns.metadata.count > 1 { for index in columns.metadataIndexes { out.varint(UInt64(index)) } }
        return out.bytes
    }

    package static func decodeSamples(_ bytes: [UInt8]) throws(ChunkCodecError) -> SampleColumns {
        var reader = ByteReader(bytes)
        let count = try header(&reader, kind: sampleKind)
        var columns = SampleColumns()
        columns.ordinals = try decodeOrdinals(count, &reader)
        (columns.starts, columns.ends) = try decodeTimes(count, &reader)
        columns.values = try decodeColumn(count, predictor: .previous, name: "value", &reader)
        let unitCount = try reader.count(limit: maximumCount, "unit table")
        guard unitCount >= 1 else { throw ChunkCodecError("a chunk of samples without a unit") }
        for _ in 0..<unitCount {
            let length = try reader.count(limit: 256, "unit symbol")
            let raw = try reader.take(length, "unit symbol")
            guard let symbol = String(validating: raw, as: UTF8.self) else {
                throw ChunkCodecError("a unit symbol is not UTF-8")
            }
            columns.units.append(symbol)
        }
        if unitCount > 1 { columns.unitIndexes = try reader.indexes(count, below: unitCount, "unit index") }
        let metadataCount = try reader.count(limit: maximumCount, "metadata table")
        for _ in 0..<metadataCount {
            let length = try reader.count(limit: 1 << 24, "metadata entry")
            columns.metadata.append(try reader.take(length, "metadata entry"))
        }
        if metadataCount > 1 {
            columns.metadataIndexes = try reader.indexes(count, below: metadataCount, "metadata index")
        }
        guard reader.isAtEnd else { throw ChunkCodecError("\(reader.remaining) bytes after the chunk's end") }
        return columns
    }

    // MARK: route

    package static func encode(_ columns: RouteColumns) -> [UInt8] {
        var out = ByteWriter()
        out.bytes += magic
        out.bytes.append(version)
        out.bytes.append(routeKind)
        out.varint(UInt64(columns.count))
        encodeOrdinals(columns.ordinals, &out)
        encodeColumn(columns.dates, predictor: .secondDifference, &out)
        encodeColumn(columns.latitudes, predictor: .secondDifference, &out)
        encodeColumn(columns.longitudes, predictor: .secondDifference, &out)
        for optional in [columns.altitudes, columns.speeds, columns.courses, columns.accuracies] {
            let present = optional.compactMap { $0 }
            if present.isEmpty {
                out.bytes.append(0)
            } else if present.count == optional.count {
                out.bytes.append(1)
            } else {
                out.bytes.append(2)
                var byte: UInt8 = 0
                for (index, value) in optional.enumerated() {
                    if value != nil { byte |= 1 << UInt8(index % 8) }
                    if index % 8 == 7 {
                        out.bytes.append(byte)
                        byte = 0
                    }
                }
                if optional.count % 8 != 0 { out.bytes.append(byte) }
            }
            if !present.isEmpty { encodeColumn(present, predictor: .previous, &out) }
        }
        return out.bytes
    }

    package static func decodeRoute(_ bytes: [UInt8]) throws(ChunkCodecError) -> RouteColumns {
        var reader = ByteReader(bytes)
        let count = try header(&reader, kind: routeKind)
        var columns = RouteColumns()
        columns.ordinals = try decodeOrdinals(count, &reader)
        columns.dates = try decodeColumn(count, predictor: .secondDifference, name: "date", &reader)
        columns.latitudes = try decodeColumn(count, predictor: .secondDifference, name: "latitude", &reader)
        columns.longitudes = try decodeColumn(count, predictor: .secondDifference, name: "longitude", &reader)
        var optionals: [[Double?]] = []
        for name in ["altitude", "speed", "course", "accuracy"] {
            let presence = try reader.byte(name)
            var present = [Bool](repeating: presence == 1, count: count)
            switch presence {
            case 0, 1: break
            case 2:
                let bitmap = try reader.take((count + 7) / 8, name)
                for index in 0..<count { present[index] = bitmap[index / 8] & (1 << UInt8(index % 8)) != 0 }
            default: throw ChunkCodecError("unknown presence mode \(presence) for \(name)")
            }
            let presentCount = present.reduce(0) { $0 + ($1 ? 1 : 0) }
            let values =
                presentCount == 0 ? [] : try decodeColumn(presentCount, predictor: .previous, name: name, &reader)
            var column: [Double?] = []
            column.reserveCapacity(count)
            var next = 0
            for flag in present {
                if flag {
                    column.append(values[next])
                    next += 1
                } else {
                    column.append(nil)
                }
            }
            optionals.append(column)
        }
        columns.altitudes = optionals[0]
        columns.speeds = optionals[1]
        columns.courses = optionals[2]
        columns.accuracies = optionals[3]
        guard reader.isAtEnd else { throw ChunkCodecError("\(reader.remaining) bytes after the chunk's end") }
        return columns
    }

    // MARK: parts

    private static func header(_ reader: inout ByteReader, kind: UInt8) throws(ChunkCodecError) -> Int {
        let tag = try reader.take(3, "format tag")
        guard tag == magic else { throw ChunkCodecError("not a chunk (no WKC format tag)") }
        let version = try reader.byte("version")
        guard version == Self.version else {
            throw ChunkCodecError("chunk format version \(version); this build reads version \(Self.version)")
        }
        let found = try reader.byte("kind")
        guard found == kind else { throw ChunkCodecError("chunk kind \(found) where \(kind) was expected") }
        let count = try reader.count(limit: maximumCount, "count")
        return count
    }

    /// First ordinal as a varint, then each gap minus one as the change from the previous gap
    /// (zigzag, zero runs): interleaved streams cost almost nothing. Ordinals strictly increase.
    private static func encodeOrdinals(_ ordinals: [Int64], _ out: inout ByteWriter) {
        guard let first = ordinals.first else { return }
        out.varint(UInt64(bitPattern: first))
        var runs = RunWriter()
        var previous = first
        var previousGap: Int64 = 0
        for ordinal in ordinals.dropFirst() {
            let gap = ordinal &- previous &- 1
            runs.put(zigzag(gap &- previousGap), &out)
            previousGap = gap
            previous = ordinal
        }
        runs.flush(&out)
    }

    private static func decodeOrdinals(_ count: Int, _ reader: inout ByteReader) throws(ChunkCodecError) -> [Int64] {
        var ordinals: [Int64] = []
        guard count > 0 else { return ordinals }
        ordinals.reserveCapacity(count)
        var previous = Int64(bitPattern: try reader.varint("ordinal"))
        ordinals.append(previous)
        var runs = RunReader()
        var previousGap: Int64 = 0
        for _ in 1..<count {
            let gap = previousGap &+ unzigzag(try runs.next(&reader, "ordinal"))
            let ordinal = previous &+ gap &+ 1
            guard gap >= 0, ordinal > previous else { throw ChunkCodecError("ordinals out of order") }
            ordinals.append(ordinal)
            previous = ordinal
            previousGap = gap
        }
        try runs.finish("ordinal")
        return ordinals
    }

    /// Starts by second difference; ends relative to their start plus the previous duration.
    private static func encodeTimes(starts: [Double], ends: [Double], _ out: inout ByteWriter) {
        let scale = commonScale(starts, ends)
        encodeColumn(starts, predictor: .secondDifference, scale: scale, &out)
        // The end column: same mode as the start column, predicted from it.
        let predicted = Predicted.relative(starts)
        encodeColumn(ends, predictor: predicted, scale: scale, &out)
    }

    private static func decodeTimes(
        _ count: Int, _ reader: inout ByteReader
    ) throws(ChunkCodecError) -> ([Double], [Double]) {
        let starts = try decodeColumn(count, predictor: .secondDifference, name: "start", &reader)
        let ends = try decodeColumn(count, predictor: .relative(starts), name: "end", &reader)
        return (starts, ends)
    }

    /// How a column predicts each entry from earlier ones; the residual is what is stored.
    enum Predicted {
        /// The previous entry (0 before the first).
        case previous
        /// The previous entry plus the previous step (regular intervals cost one byte).
        case secondDifference
        /// The same index of another column plus the previous entry's offset from it.
        case relative([Double])
    }

    /// Column mode byte: 0...15 decimal scale, 16...31 decimal scale with ulp corrections, 254 step,
    /// 255 raw bits minus the prediction's bits.
    static let rawMode: UInt8 = 255
    static let maximumScale = 15
    static let powers: [Double] = (0...15).map { exponent in
        var value = 1.0
        for _ in 0..<exponent { value *= 10 }
        return value
    }

    /// The integer `value * 10^scale` when it gives back exactly `value`'s bits, else nil.
    @inline(__always)
    static func scaled(_ value: Double, _ scale: Int) -> Int64? {
        let power = powers[scale]
        let product = (value * power).rounded()
        guard product.magnitude <= 9_007_199_254_740_992 else { return nil }  // 2^53, also NaN/inf
        let integer = Int64(product)
        return (Double(integer) / power).bitPattern == value.bitPattern ? integer : nil
    }

    /// The smallest decimal scale that represents every value exactly, or nil.
    static func scale(of values: [Double]) -> Int? {
        var scale = 0
        var index = 0
        while index < values.count {
            if scaled(values[index], scale) != nil {
                index += 1
            } else {
                // A finer scale can lose a value a coarser one kept (|q| > 2^53): check all again.
                scale += 1
                index = 0
                if scale > maximumScale { return nil }
            }
        }
        return scale
    }

    /// The smallest scale for two columns; a finer scale never loses a coarser one's exactness for
    /// the values checked, but every value is checked again at the chosen scale.
    static func commonScale(_ a: [Double], _ b: [Double]) -> Int? {
        guard var scale = scale(of: a) else { return nil }
        while scale <= maximumScale {
            if a.allSatisfy({ scaled($0, scale) != nil }) && b.allSatisfy({ scaled($0, scale) != nil }) {
                return scale
            }
            scale += 1
        }
        return nil
    }

    static func encodeColumn(_ values: [Double], predictor: Predicted, _ out: inout ByteWriter) {
        if let scale = scale(of: values) {
            encodeColumn(values, predictor: predictor, scale: scale, &out)
        } else if let step = steps.first(where: { step in values.allSatisfy { stepped($0, step) != nil } }) {
            out.bytes.append(stepMode)
            var bits = step.bitPattern
            for _ in 0..<8 {
                out.bytes.append(UInt8(truncatingIfNeeded: bits))
                bits >>= 8
            }
            encodeIntegers(values.map { stepped($0, step) ?? 0 }, predictor: predictor, &out)
        } else if let scale = correctedScale(of: values) {
            // Decimals computed with rounding error (a difference of two decimals): the nearest decimal
            // at this scale, then the distance in units in the last place to the value itself.
            out.bytes.append(correctedModes.lowerBound + UInt8(scale))
            let power = powers[scale]
            var previous: Int64 = 0
            var beforePrevious: Int64 = 0
            for (index, value) in values.enumerated() {
                let integer = Int64((value * power).rounded())
                let guess = integerPrediction(predictor, [], index, previous, beforePrevious)
                out.varint(zigzag(integer &- guess))
                out.varint(zigzag(Int64(bitPattern: value.bitPattern) &- Int64(bitPattern: (Double(integer) / power).bitPattern)))
                beforePrevious = previous
                previous = integer
            }
        } else {
            encodeColumn(values, predictor: predictor, scale: nil, &out)
        }
    }

    /// Steps of the step mode the encoder tries: FIT's semicircle (180 / 2^31 degrees).
    static let steps: [Double] = [180 / 2_147_483_648]
    static let stepMode: UInt8 = 254
    static let correctedModes: ClosedRange<UInt8> = 16...31
    /// The largest correction (ulps) the corrected mode accepts: four bytes of varint at most.
    static let maximumCorrection: Int64 = 1 << 26

    /// The integer `value / step` when `Double(integer) * step` gives back `value`'s bits, else nil.
    @inline(__always)
    static func stepped(_ value: Double, _ step: Double) -> Int64? {
        let quotient = (value / step).rounded()
        guard quotient.magnitude <= 9_007_199_254_740_992 else { return nil }
        let integer = Int64(quotient)
        return (Double(integer) * step).bitPattern == value.bitPattern ? integer : nil
    }

    /// The smallest decimal scale (at most 9) whose nearest decimals are all within
    /// `maximumCorrection` ulps of the values, or nil.
    static func correctedScale(of values: [Double]) -> Int? {
        scales: for scale in 0...9 {
            let power = powers[scale]
            for value in values {
                let product = (value * power).rounded()
                guard product.magnitude <= 9_007_199_254_740_992 else { continue scales }
                let near = Double(Int64(product)) / power
                let distance = Int64(bitPattern: value.bitPattern) &- Int64(bitPattern: near.bitPattern)
                guard distance.magnitude <= UInt64(maximumCorrection) else { continue scales }
            }
            return scale
        }
        return nil
    }

    static func encodeIntegers(_ integers: [Int64], predictor: Predicted, _ out: inout ByteWriter) {
        var previous: Int64 = 0
        var beforePrevious: Int64 = 0
        var runs = RunWriter()
        for (index, integer) in integers.enumerated() {
            runs.put(zigzag(integer &- integerPrediction(predictor, [], index, previous, beforePrevious)), &out)
            beforePrevious = previous
            previous = integer
        }
        runs.flush(&out)
    }

    static func encodeColumn(_ values: [Double], predictor: Predicted, scale: Int?, _ out: inout ByteWriter) {
        guard let scale else {
            out.bytes.append(rawMode)
            var previous = 0.0
            var beforePrevious = 0.0
            var runs = RunWriter()
            for (index, value) in values.enumerated() {
                let guess = rawPrediction(predictor, index, previous, beforePrevious)
                runs.put(zigzag(Int64(bitPattern: value.bitPattern) &- Int64(bitPattern: guess.bitPattern)), &out)
                beforePrevious = previous
                previous = value
            }
            runs.flush(&out)
            return
        }
        out.bytes.append(UInt8(scale))
        var reference: [Int64] = []
        if case .relative(let other) = predictor { reference = other.map { scaled($0, scale) ?? 0 } }
        var previous: Int64 = 0
        var beforePrevious: Int64 = 0
        var runs = RunWriter()
        for (index, value) in values.enumerated() {
            let integer = scaled(value, scale) ?? 0
            let guess = integerPrediction(predictor, reference, index, previous, beforePrevious)
            runs.put(zigzag(integer &- guess), &out)
            beforePrevious = previous
            previous = integer
        }
        runs.flush(&out)
    }

    static func decodeColumn(
        _ count: Int, predictor: Predicted, name: String, _ reader: inout ByteReader
    ) throws(ChunkCodecError) -> [Double] {
        let mode = try reader.byte(name)
        var values: [Double] = []
        values.reserveCapacity(count)
        if mode == rawMode {
            var previous = 0.0
            var beforePrevious = 0.0
            var runs = RunReader()
            for index in 0..<count {
                let guess = rawPrediction(predictor, index, previous, beforePrevious)
                let residual = unzigzag(try runs.next(&reader, name))
                let value = Double(bitPattern: UInt64(bitPattern: Int64(bitPattern: guess.bitPattern) &+ residual))
                values.append(value)
                beforePrevious = previous
                previous = value
            }
            try runs.finish(name)
            return values
        }
        if mode == stepMode || correctedModes.contains(mode) {
            if case .relative = predictor { throw ChunkCodecError("column mode \(mode) in \(name)") }
            var step = 0.0
            var power = 1.0
            if mode == stepMode {
                var bits: UInt64 = 0
                for (offset, byte) in try reader.take(8, name).enumerated() { bits |= UInt64(byte) << (8 * UInt64(offset)) }
                step = Double(bitPattern: bits)
            } else {
                power = powers[Int(mode - correctedModes.lowerBound) % powers.count]
            }
            var previous: Int64 = 0
            var beforePrevious: Int64 = 0
            var runs = RunReader()
            for index in 0..<count {
                let guess = integerPrediction(predictor, [], index, previous, beforePrevious)
                // Step columns have zero runs; corrected ones interleave corrections (no runs).
                let residual = mode == stepMode ? try runs.next(&reader, name) : try reader.varint(name)
                let integer = guess &+ unzigzag(residual)
                if mode == stepMode {
                    values.append(Double(integer) * step)
                } else {
                    let correction = unzigzag(try reader.varint(name))
                    let near = Int64(bitPattern: (Double(integer) / power).bitPattern)
                    values.append(Double(bitPattern: UInt64(bitPattern: near &+ correction)))
                }
                beforePrevious = previous
                previous = integer
            }
            try runs.finish(name)
            return values
        }
        guard Int(mode) <= maximumScale else { throw ChunkCodecError("unknown column mode \(mode) in \(name)") }
        let power = powers[Int(mode)]
        var reference: [Int64] = []
        if case .relative(let other) = predictor {
            reference.reserveCapacity(count)
            // The reference column was written at this scale; a value that is not exact there means
            // the bytes were not written by the encoder.
            for value in other {
                guard let integer = scaled(value, Int(mode)) else {
                    throw ChunkCodecError("\(name) column's scale does not fit its reference column")
                }
                reference.append(integer)
            }
        }
        var previous: Int64 = 0
        var beforePrevious: Int64 = 0
        var runs = RunReader()
        for index in 0..<count {
            let guess = integerPrediction(predictor, reference, index, previous, beforePrevious)
            let integer = guess &+ unzigzag(try runs.next(&reader, name))
            values.append(Double(integer) / power)
            beforePrevious = previous
            previous = integer
        }
        try runs.finish(name)
        return values
    }

    @inline(__always)
    static func rawPrediction(_ predictor: Predicted, _ index: Int, _ previous: Double, _ beforePrevious: Double)
        -> Double
    {
        switch predictor {
        case .previous: return previous
        case .secondDifference: return index < 2 ? previous : previous + (previous - beforePrevious)
        case .relative(let other):
            // `other` has at least `index + 1` entries (same count); guarded by the callers' counts.
            guard index < other.count else { return 0 }
            return index == 0 ? other[0] : other[index] + (previous - other[index - 1])
        }
    }

    @inline(__always)
    static func integerPrediction(
        _ predictor: Predicted, _ reference: [Int64], _ index: Int, _ previous: Int64, _ beforePrevious: Int64
    ) -> Int64 {
        switch predictor {
        case .previous: return previous
        case .secondDifference: return index < 2 ? previous : previous &+ (previous &- beforePrevious)
        case .relative:
            guard index < reference.count else { return 0 }
            return index == 0 ? reference[0] : reference[index] &+ (previous &- reference[index - 1])
        }
    }

    @inline(__always) static func zigzag(_ value: Int64) -> UInt64 {
        UInt64(bitPattern: (value << 1) ^ (value >> 63))
    }

    @inline(__always) static func unzigzag(_ value: UInt64) -> Int64 {
        Int64(bitPattern: value >> 1) ^ -Int64(bitPattern: value & 1)
    }
}

/// Writes residuals with runs of zeros shortened: a zero starts a run, the varint after it says how
/// many more zeros follow.
struct RunWriter {
    private var zeros = 0

    @inline(__always)
    mutating func put(_ value: UInt64, _ out: inout ByteWriter) {
        if value == 0 {
            zeros += 1
        } else {
            flush(&out)
            out.varint(value)
        }
    }

    mutating func flush(_ out: inout ByteWriter) {
        guard zeros > 0 else { return }
        out.varint(0)
        out.varint(UInt64(zeros - 1))
        zeros = 0
    }
}

/// Reads what `RunWriter` wrote; a run longer than the column is an error.
struct RunReader {
    private var pending = 0

    @inline(__always)
    mutating func next(_ reader: inout ByteReader, _ what: String) throws(ChunkCodecError) -> UInt64 {
        if pending > 0 {
            pending -= 1
            return 0
        }
        let value = try reader.varint(what)
        if value == 0 { pending = try reader.count(limit: ChunkCodec.maximumCount, "zero run in \(what)") }
        return value
    }

    func finish(_ what: String) throws(ChunkCodecError) {
        guard pending == 0 else { throw ChunkCodecError("a zero run runs past the end of \(what)") }
    }
}

/// Appends bytes and LEB128 varints.
struct ByteWriter {
    var bytes: [UInt8] = []

    @inline(__always)
    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }
}

/// Reads bytes and varints with bounds checks.
struct ByteReader {
    let bytes: [UInt8]
    var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - position }
    var isAtEnd: Bool { position == bytes.count }

    mutating func byte(_ what: String) throws(ChunkCodecError) -> UInt8 {
        guard position < bytes.count else { throw ChunkCodecError("truncated in \(what)") }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func take(_ count: Int, _ what: String) throws(ChunkCodecError) -> [UInt8] {
        guard count >= 0, count <= remaining else { throw ChunkCodecError("truncated in \(what)") }
        defer { position += count }
        return Array(bytes[position..<(position + count)])
    }

    @inline(__always)
    mutating func varint(_ what: String) throws(ChunkCodecError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard position < bytes.count else { throw ChunkCodecError("truncated in \(what)") }
            let byte = bytes[position]
            position += 1
            guard shift < 64, shift < 63 || byte <= 1 else { throw ChunkCodecError("varint too long in \(what)") }
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
    }

    mutating func count(limit: Int, _ what: String) throws(ChunkCodecError) -> Int {
        let value = try varint(what)
        guard value <= UInt64(limit) else { throw ChunkCodecError("\(what) of \(value) exceeds \(limit)") }
        return Int(value)
    }

    mutating func indexes(_ count: Int, below limit: Int, _ what: String) throws(ChunkCodecError) -> [Int] {
        var result: [Int] = []
        result.reserveCapacity(count)
        for _ in 0..<count {
            let value = try varint(what)
            guard value < UInt64(limit) else { throw ChunkCodecError("\(what) \(value) outside its table") }
            result.append(Int(value))
        }
        return result
    }
}
