import Foundation
import WorkoutEngine
import WorkoutModel

/// Samples and route points to chunks and back: the store's side of the chunk format, the same
/// for every backend (docs/storage-chunks.md).
enum Series {
    /// Samples (or route points) per chunk of a saved or finished workout.
    static let capacity = 4096

    /// Samples (or route points) at which a recording's journal closes a stream's open tail chunk.
    ///
    /// A commit encodes and rewrites each stream's open tail, which the journal also keeps in memory as
    /// decoded columns: this bound keeps both small for a long recording (a 1 Hz stream fills it in about
    /// half a minute), where `capacity` would let them grow to 4,096 samples (68 minutes). Finishing the
    /// recording merges its small chunks into chunks of `capacity` (`ChunkCompaction`). Each commit encodes
    /// the open tails whole, so a smaller bound costs less per commit (a live server commits a thousand
    /// sessions a second) and a session's memory stops growing sooner; 32 was 128 until the server's load
    /// runs showed its per-commit cost and a memory that grew for the first two minutes of a session.
    static let journalTailCapacity = 32

    /// The stream a sample belongs to in storage.
    struct StreamKey: Hashable {
        var type: QuantityType
        var source: SourceDevice
    }

    /// Splits `samples` (ordinals from `firstOrdinal` in the given order) into chunks per stream.
    static func chunks(_ samples: [QuantitySample], firstOrdinal: Int64) -> [SampleChunk] {
        var streams: [StreamKey: [(Int64, QuantitySample)]] = [:]
        var order: [StreamKey] = []
        for (offset, sample) in samples.enumerated() {
            let key = StreamKey(type: sample.type, source: sample.source)
            if streams[key] == nil { order.append(key) }
            streams[key, default: []].append((firstOrdinal + Int64(offset), sample))
        }
        var result: [SampleChunk] = []
        for key in order {
            guard let stream = streams[key] else { continue }
            result += chunks(key, stream)
        }
        return result
    }

    /// One stream's samples (ordinals increasing) in chunks of `capacity`.
    static func chunks(_ key: StreamKey, _ stream: [(Int64, QuantitySample)]) -> [SampleChunk] {
        var result: [SampleChunk] = []
        var start = 0
        while start < stream.count {
            let end = min(start + capacity, stream.count)
            result.append(chunk(key, stream[start..<end]))
            start = end
        }
        return result
    }

    /// One chunk of consecutive samples of one stream (ordinal, sample), ordinals increasing.
    static func chunk(_ key: StreamKey, _ samples: ArraySlice<(Int64, QuantitySample)>) -> SampleChunk {
        var builder = StreamBuilder(key)
        builder.reserve(samples.count)
        for (ordinal, sample) in samples { builder.append(ordinal, sample) }
        return builder.chunk()
    }

    /// The columns of one stream's chunk, built one sample at a time: a recording's open tail is
    /// extended by each commit and encoded again, without going over its earlier samples.
    struct StreamBuilder: Sendable {
        let key: StreamKey
        var columns = SampleColumns()
        private var unitTable: [String: Int] = [:]
        private var unitIndexes: [Int] = []
        private var lastUnit: QuantityUnit?
        private var lastUnitIndex = 0
        private var metadataTable: [ExactMetadata: Int] = [:]
        private var metadataEntries: [[UInt8]] = []
        private var metadataIndexes: [Int] = []
        private var anyMetadata = false
        private var startMin = Double.infinity
        private var startMax = -Double.infinity
        private var endMin = Double.infinity
        private var endMax = -Double.infinity
        private var valueMin: Double?
        private var valueMax: Double?

        /// Set by `append`; the journal clears it once the tail is written.
        var touched = false

        init(_ key: StreamKey) { self.key = key }

        var count: Int { columns.ordinals.count }

        mutating func reserve(_ count: Int) {
            columns.ordinals.reserveCapacity(count)
            columns.starts.reserveCapacity(count)
            columns.ends.reserveCapacity(count)
            columns.values.reserveCapacity(count)
            unitIndexes.reserveCapacity(count)
            metadataIndexes.reserveCapacity(count)
        }

        /// Adds a sample; returns the number of samples now in the chunk.
        @discardableResult
        mutating func append(_ ordinal: Int64, _ sample: QuantitySample) -> Int {
            touched = true
            var quantity = sample.quantity
            let unitIndex: Int
            if let lastUnit, lastUnit == quantity.unit {
                unitIndex = lastUnitIndex
            } else {
                // A unit outside the predefined set would not decode by its symbol: kept in the type's
                // canonical unit, as the row-per-sample store did.
                if QuantityUnit(symbol: quantity.unit.symbol) != quantity.unit {
                    quantity = Quantity(sample.canonicalValue ?? quantity.value, sample.type.canonicalUnit)
                } else {
                    lastUnit = quantity.unit
                }
                if let known = unitTable[quantity.unit.symbol] {
                    unitIndex = known
                } else {
                    unitIndex = columns.units.count
                    unitTable[quantity.unit.symbol] = unitIndex
                    columns.units.append(quantity.unit.symbol)
                }
                if lastUnit == quantity.unit { lastUnitIndex = unitIndex }
            }
            let start = sample.start.timeIntervalSinceReferenceDate
            let end = sample.end.timeIntervalSinceReferenceDate
            columns.ordinals.append(ordinal)
            columns.starts.append(start)
            columns.ends.append(end)
            columns.values.append(quantity.value)
            unitIndexes.append(unitIndex)
            if sample.metadata.isEmpty, !anyMetadata {
                metadataIndexes.append(0)
            } else {
                if !anyMetadata {
                    // The samples so far had none: entry 0 is the empty dictionary.
                    anyMetadata = true
                    metadataTable[ExactMetadata([:])] = 0
                    metadataEntries.append(Array("{}".utf8))
                }
                let metadataIndex: Int
                if let known = metadataTable[ExactMetadata(sample.metadata)] {
                    metadataIndex = known
                } else {
                    metadataIndex = metadataEntries.count
                    metadataTable[ExactMetadata(sample.metadata)] = metadataIndex
                    // Through its Codable form (JSON), so that every form Metadata decodes stays readable.
                    metadataEntries.append(Array(JSON.encode(sample.metadata).utf8))
                }
                metadataIndexes.append(metadataIndex)
            }
            startMin = min(startMin, start)
            startMax = max(startMax, start)
            endMin = min(endMin, end)
            endMax = max(endMax, end)
            if let canonical = sample.canonicalValue, canonical.isFinite {
                valueMin = min(valueMin ?? canonical, canonical)
                valueMax = max(valueMax ?? canonical, canonical)
            }
            return columns.ordinals.count
        }

        /// The chunk of every sample appended so far.
        func chunk() -> SampleChunk {
            var columns = self.columns
            if columns.units.count > 1 { columns.unitIndexes = unitIndexes }
            if anyMetadata {
                columns.metadata = metadataEntries
                if metadataEntries.count > 1 { columns.metadataIndexes = metadataIndexes }
            }
            return SampleChunk(
                type: key.type, source: key.source, count: columns.count, firstOrdinal: columns.ordinals.first ?? 0,
                lastOrdinal: columns.ordinals.last ?? 0, startMin: startMin, startMax: startMax, endMin: endMin,
                endMax: endMax, valueMin: valueMin, valueMax: valueMax, payload: ChunkCodec.encode(columns))
        }
    }

    /// Metadata as a table key: equal only when every key and string has the same UTF-8 and every
    /// number the same bits. `Metadata`'s own `==` takes -0.0 for 0.0 and "é" for "e\u{301}", so one
    /// sample's entry would be given to the other.
    struct ExactMetadata: Hashable {
        let metadata: Metadata
        init(_ metadata: Metadata) { self.metadata = metadata }

        func hash(into hasher: inout Hasher) { hasher.combine(metadata) }

        static func == (a: ExactMetadata, b: ExactMetadata) -> Bool {
            guard a.metadata == b.metadata else { return false }
            for (key, value) in a.metadata {
                guard let index = b.metadata.index(forKey: key) else { return false }
                let (otherKey, other) = b.metadata[index]
                guard key.utf8.elementsEqual(otherKey.utf8), exact(value) == exact(other) else { return false }
            }
            return true
        }

        /// What must match bit for bit beyond `==`.
        private static func exact(_ value: MetadataValue) -> [UInt8] {
            func bits(_ number: Double) -> [UInt8] { withUnsafeBytes(of: number.bitPattern) { Array($0) } }
            switch value {
            case .double(let number): return bits(number)
            case .date(let date): return bits(date.timeIntervalSinceReferenceDate)
            case .quantity(let quantity): return bits(quantity.value) + Array(quantity.unit.symbol.utf8)
            case .string(let text): return Array(text.utf8)
            case .int, .bool: return []
            }
        }
    }

    /// The samples of a chunk with their ordinals. A chunk that does not decode throws
    /// `.corruptChunk` naming the workout.
    static func decode(_ chunk: SampleChunk, workout: UUID) throws(StoreError) -> [(Int64, QuantitySample)] {
        let columns: SampleColumns
        do {
            columns = try ChunkCodec.decodeSamples(chunk.payload)
        } catch {
            throw .corruptChunk(workout: workout, detail: "\(chunk.type.rawValue) chunk: \(error.reason)")
        }
        guard columns.count == chunk.count else {
            throw .corruptChunk(
                workout: workout,
                detail: "\(chunk.type.rawValue) chunk holds \(columns.count) samples, its row says \(chunk.count)")
        }
        var units: [QuantityUnit] = []
        for symbol in columns.units {
            guard let unit = QuantityUnit(symbol: symbol) else {
                throw .corruptChunk(workout: workout, detail: "unknown unit '\(symbol)' in a \(chunk.type.rawValue) chunk")
            }
            units.append(unit)
        }
        var metadata: [Metadata] = []
        for entry in columns.metadata {
            do {
                metadata.append(try JSON.decode(Metadata.self, String(decoding: entry, as: UTF8.self)))
            } catch {
                throw .corruptChunk(workout: workout, detail: "unreadable metadata in a \(chunk.type.rawValue) chunk")
            }
        }
        var result: [(Int64, QuantitySample)] = []
        result.reserveCapacity(columns.count)
        let singleUnit = units.count == 1 ? units[0] : nil
        let singleMetadata: Metadata = metadata.count == 1 ? metadata[0] : [:]
        for index in 0..<columns.count {
            let unit = singleUnit ?? units[columns.unitIndexes[index]]
            let sampleMetadata = metadata.count > 1 ? metadata[columns.metadataIndexes[index]] : singleMetadata
            result.append(
                (
                    columns.ordinals[index],
                    QuantitySample(
                        type: chunk.type, quantity: Quantity(columns.values[index], unit),
                        start: Date(timeIntervalSinceReferenceDate: columns.starts[index]),
                        end: Date(timeIntervalSinceReferenceDate: columns.ends[index]), source: chunk.source,
                        metadata: sampleMetadata)
                ))
        }
        return result
    }

    // MARK: route

    /// Route points (ordinals from `firstOrdinal`) in chunks of `capacity`.
    static func routeChunks(_ points: [RoutePoint], firstOrdinal: Int64) -> [RouteChunk] {
        var result: [RouteChunk] = []
        var start = 0
        while start < points.count {
            let end = min(start + capacity, points.count)
            result.append(routeChunk(points[start..<end], firstOrdinal: firstOrdinal + Int64(start)))
            start = end
        }
        return result
    }

    static func routeChunk(_ points: ArraySlice<RoutePoint>, firstOrdinal: Int64) -> RouteChunk {
        routeChunk(points.enumerated().map { (firstOrdinal + Int64($0.offset), $0.element) }[...])
    }

    /// One chunk of route points with their ordinals (increasing).
    static func routeChunk(_ points: ArraySlice<(Int64, RoutePoint)>) -> RouteChunk {
        var columns = RouteColumns()
        var dateMin = Double.infinity
        var dateMax = -Double.infinity
        for (ordinal, point) in points {
            let date = point.date.timeIntervalSinceReferenceDate
            columns.ordinals.append(ordinal)
            columns.dates.append(date)
            columns.latitudes.append(point.latitude)
            columns.longitudes.append(point.longitude)
            columns.altitudes.append(point.altitude)
            columns.speeds.append(point.speed)
            columns.courses.append(point.course)
            columns.accuracies.append(point.horizontalAccuracy)
            dateMin = min(dateMin, date)
            dateMax = max(dateMax, date)
        }
        return RouteChunk(
            count: points.count, firstOrdinal: columns.ordinals.first ?? 0, lastOrdinal: columns.ordinals.last ?? -1,
            dateMin: dateMin, dateMax: dateMax, payload: ChunkCodec.encode(columns))
    }

    static func decode(_ chunk: RouteChunk, workout: UUID) throws(StoreError) -> [(Int64, RoutePoint)] {
        let columns: RouteColumns
        do {
            columns = try ChunkCodec.decodeRoute(chunk.payload)
        } catch {
            throw .corruptChunk(workout: workout, detail: "route chunk: \(error.reason)")
        }
        guard columns.count == chunk.count else {
            throw .corruptChunk(
                workout: workout, detail: "route chunk holds \(columns.count) points, its row says \(chunk.count)")
        }
        return (0..<columns.count).map { index in
            (
                columns.ordinals[index],
                RoutePoint(
                    date: Date(timeIntervalSinceReferenceDate: columns.dates[index]),
                    latitude: columns.latitudes[index], longitude: columns.longitudes[index],
                    altitude: columns.altitudes[index], speed: columns.speeds[index], course: columns.courses[index],
                    horizontalAccuracy: columns.accuracies[index])
            )
        }
    }
}
