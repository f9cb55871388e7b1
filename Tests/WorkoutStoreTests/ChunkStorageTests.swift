import Foundation
import GRDB
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore

/// Bits of a sample that must survive storage exactly (Date and Double equality would let -0.0 and
/// 0.0 pass as equal).
private func bits(_ sample: QuantitySample) -> [UInt64] {
    [
        sample.start.timeIntervalSinceReferenceDate.bitPattern, sample.end.timeIntervalSinceReferenceDate.bitPattern,
        sample.quantity.value.bitPattern,
    ]
}

private func minimalWorkout(_ id: UUID, start: Date, end: Date) -> Workout {
    Workout(
        id: id, configuration: WorkoutConfiguration(activityType: .cycling), start: start, end: end,
        duration: end.timeIntervalSince(start), activities: [], events: [], metadata: [:], statistics: [:],
        counters: IngestCounters())
}

@Suite("Store: chunked series")
struct ChunkStorageTests {
    @Test("irregular samples (gaps, out of order, odd doubles, units, metadata) come back bit-identical", arguments: Backend.available)
    func irregularSamplesRoundTripExactly(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        var generator = SystemRandomNumberGenerator()
        var samples: [QuantitySample] = []
        var time = 0.0
        for index in 0..<5000 {
            // Smart recording: irregular steps, long gaps, the odd step back in time (reorder window).
            let step = [1.0, 1.0, 0.25, 3.7, 600.0, -0.5, Double.random(in: 0...5, using: &generator)][index % 7]
            time += step
            let heartRate = [140.0, 141, 139.5, 0.1 + 0.2, Double.random(in: 60...200, using: &generator)][index % 5]
            samples.append(QuantitySample(.heartRate, heartRate, at: t(time), source: strap))
            let metadata: Metadata = index % 97 == 0 ? ["Lap": .int(index / 97), "Note": .string("é\u{0}x")] : [:]
            let distance = index % 11 == 0 ? -0.0 : Double.random(in: 0...12, using: &generator)
            let unit: QuantityUnit = index % 13 == 0 ? .kilometer : .meter
            samples.append(
                QuantitySample(
                    .distanceCycling, distance, unit, at: t(time), end: t(time + 1.000_000_1), source: bike,
                    metadata: metadata))
        }
        let id = UUID()
        try store.save(minimalWorkout(id, start: t(-10), end: t(time + 10)), samples: samples)
        let back = try store.samples(workout: id)
        // Time order, ties in the order saved: the row-per-sample store's order.
        let indexed: [(offset: Int, element: QuantitySample)] = Array(samples.enumerated())
        let sorted = indexed.sorted { (a, b) -> Bool in
            a.element.start != b.element.start ? a.element.start < b.element.start : a.offset < b.offset
        }
        let expected: [QuantitySample] = sorted.map(\.element)
        #expect(back == expected)
        #expect(back.map(bits) == expected.map(bits))
        #expect(back.map(\.quantity.unit) == expected.map(\.quantity.unit))
    }

    @Test("metadata differing only in a zero's sign or a string's normalization comes back bit-identical", arguments: Backend.available)
    func metadataDifferingOnlyInTheSignOfZeroStaysExact(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let variants: [Metadata] = [
            ["x": .double(0.0)], ["x": .double(-0.0)],
            ["when": .date(Date(timeIntervalSinceReferenceDate: 0.0))],
            ["when": .date(Date(timeIntervalSinceReferenceDate: -0.0))],
            ["q": .quantity(Quantity(0.0, .meter))], ["q": .quantity(Quantity(-0.0, .meter))],
            ["name": .string("caf\u{E9}")], ["name": .string("cafe\u{301}")],
            ["\u{E9}": .int(1)], ["e\u{301}": .int(1)],
        ]
        let samples = (0..<20).map { index in
            QuantitySample(
                .heartRate, 140, at: t(Double(index)), source: strap, metadata: variants[index % variants.count])
        }
        let id = UUID()
        try store.save(minimalWorkout(id, start: t(0), end: t(12)), samples: samples)
        /// A metadata dictionary as UTF-8 keys and strings and number bits (== would take -0.0 for
        /// 0.0 and "é" for "e\u{301}").
        func metadataBits(_ metadata: Metadata) -> [[UInt8]: [UInt8]] {
            func bits(_ number: Double) -> [UInt8] { withUnsafeBytes(of: number.bitPattern) { Array($0) } }
            var result: [[UInt8]: [UInt8]] = [:]
            for (key, value) in metadata {
                switch value {
                case .double(let number): result[Array(key.utf8)] = bits(number)
                case .date(let date): result[Array(key.utf8)] = bits(date.timeIntervalSinceReferenceDate)
                case .quantity(let quantity): result[Array(key.utf8)] = bits(quantity.value)
                case .string(let text): result[Array(key.utf8)] = Array(text.utf8)
                default: result[Array(key.utf8)] = []
                }
            }
            return result
        }
        let back = try store.samples(workout: id)
        #expect(back.map { metadataBits($0.metadata) } == samples.map { metadataBits($0.metadata) })
    }

    @Test("a column whose values need different decimal scales is stored exactly (found by the fuzzer)", arguments: Backend.available)
    func mixedScalesStayExact(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        // 1e15 is exact at scale 0 only (10 × 1e15 > 2^53); 163.5 needs scale 1.
        let values = [1e15, 163.5, 7, 1e15 + 1, 0.25]
        let samples = values.enumerated().map { index, value in
            QuantitySample(.distanceCycling, value, at: t(Double(index)), end: t(Double(index) + 0.5), source: bike)
        }
        let id = UUID()
        try store.save(minimalWorkout(id, start: t(0), end: t(10)), samples: samples)
        #expect(try store.samples(workout: id).map(\.quantity.value) == values)
    }

    @Test("route points come back exactly, in time order", arguments: Backend.available)
    func routeRoundTrips(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        var generator = SystemRandomNumberGenerator()
        var route: [RoutePoint] = []
        for index in 0..<3000 {
            let offset: Double = index % 50 == 0 ? 0.5 : 0
            let latitude: Double = 45 + Double.random(in: -0.01...0.01, using: &generator)
            let altitude: Double? = index % 3 == 0 ? nil : Double(index) / 10
            let speed: Double? = index % 2 == 0 ? 4.2 : nil
            let course: Double? = index % 5 == 0 ? 359.9 : nil
            route.append(
                RoutePoint(
                    date: t(Double(index) + offset), latitude: latitude, longitude: 6.123_456_7, altitude: altitude,
                    speed: speed, course: course))
        }
        let id = UUID()
        try store.save(minimalWorkout(id, start: t(0), end: t(3000)), route: route)
        let indexed: [(offset: Int, element: RoutePoint)] = Array(route.enumerated())
        let sorted = indexed.sorted { (a, b) -> Bool in
            a.element.date != b.element.date ? a.element.date < b.element.date : a.offset < b.offset
        }
        let expected: [RoutePoint] = sorted.map(\.element)
        #expect(try store.route(workout: id) == expected)
    }

    @Test("a date-range query returns the samples the row-per-sample store did, for every option", arguments: Backend.available)
    func dateRangeQueriesMatchTheRowSemantics(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        var samples: [QuantitySample] = []
        for second in 0..<4000 {
            samples.append(QuantitySample(.heartRate, Double(100 + second % 50), at: t(Double(second)), source: strap))
            samples.append(
                QuantitySample(
                    .distanceCycling, 7, at: t(Double(second)), end: t(Double(second) + 1), source: bike))
        }
        try store.save(minimalWorkout(UUID(), start: t(0), end: t(4000)), samples: samples)
        for options: DateOptions in [[], .strictStartDate, .strictEndDate, [.strictStartDate, .strictEndDate]] {
            let range = DateRange(start: t(1500), end: t(2600.5), options: options)
            for type in [QuantityType.heartRate, .distanceCycling] {
                let expected = samples.filter { sample in
                    guard sample.type == type else { return false }
                    let (from, to) = (t(1500), t(2600.5))
                    if options.contains(.strictStartDate), !(sample.start >= from && sample.start < to) { return false }
                    if options.contains(.strictEndDate), !(sample.end > from && sample.end <= to) { return false }
                    if options.isEmpty, !(sample.start < to && sample.end >= from) { return false }
                    return true
                }
                #expect(try store.samples(matching: SampleQuery(type: type, dates: range)) == expected)
                let newest = try store.samples(matching: SampleQuery(type: type, dates: range, ascending: false, limit: 3))
                #expect(newest == Array(expected.reversed().prefix(3)))
            }
        }
    }

    @Test("a chunk row of a quantity type this build does not know is a typed error, never skipped silently", arguments: Backend.available)
    func chunkOfAnUnknownTypeIsATypedError(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        defer { fixture.cleanup() }
        let id = UUID()
        let samples = (0..<10).map { QuantitySample(.heartRate, 150, at: t(Double($0)), source: strap) }
        try store.save(minimalWorkout(id, start: t(0), end: t(10)), samples: samples)
        try fixture.execute(
            sqlite: "UPDATE sample_chunk SET type = 'bogusType'",
            postgres: "UPDATE sample_chunk SET type = 'bogusType' WHERE athlete = \(fixture.athleteLiteral)")
        #expect {
            try store.samples(workout: id)
        } throws: { error in
            guard case .corruptChunk(let workout, let detail) = error as? StoreError else { return false }
            return workout == id && detail.contains("bogusType")
        }
    }

    @Test("a corrupt chunk is a typed error naming its workout; other workouts stay readable", arguments: Backend.available)
    func corruptChunkIsATypedError(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        defer { fixture.cleanup() }
        let damaged = UUID()
        let intact = UUID()
        let samples = (0..<100).map { QuantitySample(.heartRate, 150, at: t(Double($0)), source: strap) }
        try store.save(minimalWorkout(damaged, start: t(0), end: t(100)), samples: samples)
        let later = samples.map { sample -> QuantitySample in
            var copy = sample
            copy.start = sample.start.addingTimeInterval(10_000)
            copy.end = copy.start
            return copy
        }
        try store.save(minimalWorkout(intact, start: t(10_000), end: t(10_100)), samples: later)
        try fixture.execute(
            sqlite: """
                UPDATE sample_chunk SET data = substr(data, 1, 12)
                WHERE workout_id = (SELECT id FROM workout WHERE uuid = ?)
                """, [damaged.uuidString],
            postgres: """
                UPDATE sample_chunk SET data = substring(data from 1 for 12) WHERE athlete = \(fixture.athleteLiteral)
                AND workout_row = (SELECT row_id FROM workout WHERE athlete = \(fixture.athleteLiteral) AND uuid = $1::uuid)
                """, [damaged.uuidString])
        #expect {
            try store.samples(workout: damaged)
        } throws: { error in
            guard case .corruptChunk(let workout, _) = error as? StoreError else { return false }
            return workout == damaged
        }
        #expect(try store.samples(workout: intact) == later)
        #expect(try store.workout(id: damaged) != nil)
    }

    @Test("a recording rewrites only the open tail of each stream; recovery gives every committed sample", arguments: Backend.available)
    func journalWritesTailsNotWholeStreams(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        defer { fixture.cleanup() }
        let clock = ManualClock(t(0))
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .cycling), clock: clock,
            options: BuilderOptions(dataSource: WorkoutDataSource(explicitTypes: [.heartRate, .distanceCycling])),
            commitInterval: 0)
        try recording.session.start(at: t(0))
        var added: [QuantitySample] = []
        var largest = 0
        for second in 0..<5000 {
            let batch = [
                QuantitySample(.heartRate, Double(120 + second % 40), at: t(Double(second)), source: strap),
                QuantitySample(
                    .distanceCycling, 8.5, at: t(Double(second)), end: t(Double(second + 1)), source: bike),
            ]
            clock.set(t(Double(second)))
            try recording.builder.add(batch)
            added += batch
            if second % 10 == 9 { try recording.commit() }
            // While recording, no chunk row (an open tail included) goes past the journal's bound of 32.
            if second % 500 == 499 { largest = max(largest, try chunkCounts(fixture).max() ?? 0) }
        }
        try recording.commit()
        #expect(largest == 32)
        // Two streams of 5,000 samples: 156 closed chunks of 32 and one open tail of 8 each, whatever the commits.
        #expect(try chunkCounts(fixture).sorted() == [8, 8] + Array(repeating: 32, count: 312))
        #expect(try recording.committedSamples() == added)
        let recovered = try #require(try store.recoverActiveSession(clock: clock, commitInterval: 0))
        #expect(try recovered.committedSamples() == added)
        #expect(recovered.builder.counters.accepted == added.count)
    }

    @Test(
        "finishing a journaled recording merges its small chunks into full ones, the same as a save of its samples",
        arguments: Backend.available)
    func finishedRecordingIsCompactedLikeASave(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        defer { fixture.cleanup() }
        let clock = ManualClock(t(0))
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .cycling), clock: clock,
            options: BuilderOptions(dataSource: WorkoutDataSource(explicitTypes: [.heartRate, .distanceCycling])),
            commitInterval: 0)
        try recording.session.start(at: t(0))
        var added: [QuantitySample] = []
        var route: [RoutePoint] = []
        func record(_ recording: JournaledRecording, _ seconds: Range<Int>) throws {
            for second in seconds {
                let batch = [
                    QuantitySample(
                        .heartRate, Double(120 + second % 40), at: t(Double(second)), source: strap,
                        metadata: second % 1000 == 0 ? ["lap": .int(second / 1000)] : [:]),
                    QuantitySample(
                        .distanceCycling, 8.5 + Double(second % 3), at: t(Double(second)), end: t(Double(second + 1)),
                        source: bike),
                ]
                clock.set(t(Double(second)))
                try recording.builder.add(batch)
                added += batch
                let point = RoutePoint(date: t(Double(second)), latitude: 45 + Double(second) * 1e-5, longitude: 6)
                try recording.builder.addRoute([point])
                route.append(point)
                if second % 7 == 6 { try recording.commit() }
            }
            try recording.commit()
        }
        try record(recording, 0..<3000)
        // The "crash" with many small closed chunks and open tails: recovery is exact and goes on.
        let recovered = try #require(try store.recoverActiveSession(clock: clock, commitInterval: 0))
        #expect(try recovered.committedSamples() == added)
        try record(recovered, 3000..<9000)
        #expect(try chunkCounts(fixture).allSatisfy { $0 <= 32 })
        clock.set(t(9000))
        try recovered.session.end(at: t(9000))
        let workout = try recovered.finish()
        #expect(try store.samples(workout: workout.id) == added)
        #expect(try store.route(workout: workout.id) == route)
        // Full chunks again: 9,000 samples per stream in 4,096 + 4,096 + 808, the route likewise.
        #expect(try chunkCounts(fixture, workout: workout.id).sorted() == [808, 808, 4096, 4096, 4096, 4096])
        let routeCounts = try fixture.execute(
            sqlite: "SELECT count FROM route_chunk",
            postgres: "SELECT count::text FROM route_chunk WHERE athlete = \(fixture.athleteLiteral)"
        ).compactMap { $0.first.flatMap { $0 }.flatMap { Int($0) } }
        #expect(routeCounts.sorted() == [808, 4096, 4096])
        // Byte for byte the chunks a save of the same samples writes (same ordinals, same encoding).
        let saved = UUID()
        try store.save(minimalWorkout(saved, start: t(0), end: t(9000)), samples: added, route: route)
        #expect(try chunkRows(fixture, workout: workout.id) == (try chunkRows(fixture, workout: saved)))
        #expect(try chunkRows(fixture, workout: workout.id).count == 6)
        #expect(try store.samples(workout: saved) == (try store.samples(workout: workout.id)))
        func heartRate(_ id: UUID) throws -> [QuantitySample] {
            try store.samples(
                matching: SampleQuery(type: .heartRate, dates: DateRange(start: t(4000), end: t(4100)), workout: id))
        }
        #expect(try heartRate(workout.id).count >= 100)
        #expect(try heartRate(workout.id) == (try heartRate(saved)))
    }

    @Test(
        "a recording chunked whole (a file's replay) writes full chunks as it goes and finishes as a save of its samples",
        arguments: Backend.available)
    func wholeChunkedRecordingFinishesLikeASave(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        defer { fixture.cleanup() }
        let clock = ManualClock(t(0))
        let recording = try startedHeartRateRecording(store, clock: clock, chunking: .whole)
        var added: [QuantitySample] = []
        var route: [RoutePoint] = []
        for second in 0..<9000 {
            let sample = QuantitySample(.heartRate, Double(120 + second % 40), at: t(Double(second)), source: strap)
            clock.set(t(Double(second)))
            try recording.builder.add([sample])
            added.append(sample)
            let point = RoutePoint(date: t(Double(second)), latitude: 45 + Double(second) * 1e-5, longitude: 6)
            try recording.builder.addRoute([point])
            route.append(point)
            // Two commits midway: the open chunk is rewritten, closed chunks are full ones.
            if second == 2999 || second == 5999 {
                try recording.commit()
                #expect(try chunkCounts(fixture).sorted() == (second == 2999 ? [3000] : [1904, 4096]))
            }
        }
        clock.set(t(9000))
        try recording.session.end(at: t(9000))
        let workout = try recording.finish()
        #expect(try store.journaledSessions().isEmpty)
        #expect(try store.samples(workout: workout.id) == added)
        #expect(try store.route(workout: workout.id) == route)
        let saved = UUID()
        try store.save(minimalWorkout(saved, start: t(0), end: t(9000)), samples: added, route: route)
        #expect(try chunkRows(fixture, workout: workout.id).map { $0[0] } == ["4096", "4096", "808"])
        #expect(try chunkRows(fixture, workout: workout.id) == (try chunkRows(fixture, workout: saved)))
    }

    @Test(
        "a whole-chunked recording recovered after a crash goes on and finishes as a save of its samples",
        arguments: Backend.available)
    func wholeChunkedRecordingRecoversAndFinishesLikeASave(_ backend: Backend) throws {
        let fixture = try StoreFixture(backend)
        let store = fixture.store
        defer { fixture.cleanup() }
        let clock = ManualClock(t(0))
        let recording = try startedHeartRateRecording(store, clock: clock, chunking: .whole)
        var added: [QuantitySample] = []
        func record(_ recording: JournaledRecording, _ seconds: Range<Int>) throws {
            for second in seconds {
                let sample = QuantitySample(.heartRate, Double(100 + second % 60), at: t(Double(second)), source: strap)
                clock.set(t(Double(second)))
                try recording.builder.add([sample])
                added.append(sample)
            }
            try recording.commit()
        }
        try record(recording, 0..<5000)
        // The "crash": a full chunk and an open one of 904 committed; recovery goes on as a live recording.
        let recovered = try #require(try store.recoverActiveSession(clock: clock, commitInterval: 0))
        #expect(try recovered.committedSamples() == added)
        try record(recovered, 5000..<9000)
        clock.set(t(9000))
        try recovered.session.end(at: t(9000))
        let workout = try recovered.finish()
        #expect(try store.samples(workout: workout.id) == added)
        let saved = UUID()
        try store.save(minimalWorkout(saved, start: t(0), end: t(9000)), samples: added)
        #expect(try chunkRows(fixture, workout: workout.id) == (try chunkRows(fixture, workout: saved)))
    }

    /// The sample counts of the store's chunk rows (of one workout, or of all, recordings included).
    private func chunkCounts(_ fixture: StoreFixture, workout: UUID? = nil) throws -> [Int] {
        try chunkRows(fixture, workout: workout).compactMap { Int($0[0] ?? "") }
    }

    /// Count, first ordinal and hexadecimal bytes of the sample chunk rows (of one workout, or of all), by ordinal.
    private func chunkRows(_ fixture: StoreFixture, workout: UUID? = nil) throws -> [[String?]] {
        guard let workout else {
            return try fixture.execute(
                sqlite: "SELECT count, first_ordinal, hex(data) FROM sample_chunk ORDER BY first_ordinal",
                postgres: """
                    SELECT count::text, first_ordinal::text, encode(data, 'hex') FROM sample_chunk
                    WHERE athlete = \(fixture.athleteLiteral) ORDER BY first_ordinal
                    """)
        }
        return try fixture.execute(
            sqlite: """
                SELECT c.count, c.first_ordinal, hex(c.data) FROM sample_chunk c JOIN workout w ON w.id = c.workout_id
                WHERE w.uuid = ? ORDER BY c.first_ordinal
                """, [workout.uuidString],
            postgres: """
                SELECT count::text, first_ordinal::text, encode(data, 'hex') FROM sample_chunk
                WHERE athlete = \(fixture.athleteLiteral)
                AND workout_row = (SELECT row_id FROM workout WHERE athlete = \(fixture.athleteLiteral) AND uuid = $1::uuid)
                ORDER BY first_ordinal
                """, [workout.uuidString])
    }

    @Test("adversarial doubles and times, streams of 0 to 8,193 samples (chunk edges) come back bit-identical", arguments: Backend.available)
    func adversarialStreamsAtChunkEdgesRoundTripExactly(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let odd: [Double] = [
            -0.0, 0, .leastNonzeroMagnitude, -Double.leastNonzeroMagnitude, .leastNormalMagnitude, 1e300, -1e300,
            .greatestFiniteMagnitude, 1e-300, 0.1 + 0.2, 1.0 / 3.0, 123.456_789_012_345_678, 9_007_199_254_740_992,
            -2.5, 1e15 + 0.5, 0.000_001,
        ]
        // Sources differing only by identifier are two streams.
        let twin = SourceDevice(name: strap.name, manufacturer: strap.manufacturer, identifier: "ant:120:2")
        for count in [0, 1, 2, 4095, 4096, 4097, 8192, 8193] {
            var samples: [QuantitySample] = []
            for index in 0..<count {
                // Identical timestamps, nanosecond steps, large gaps back and forth, end != start.
                let start = index % 5 == 0 ? 1e9 + Double(index) * 1e-9 : (index % 7 == 0 ? -1e8 : Double(index / 3))
                let end = index % 3 == 0 ? start : start + [0.001, 1e6, Double.leastNonzeroMagnitude][index % 3]
                let metadata: Metadata =
                    index % 4 == 0
                    ? [:]
                    : [
                        "k": .double([0.0, -0.0, Double.leastNormalMagnitude / 3, 3.3][index % 4]),
                        "d": .date(Date(timeIntervalSinceReferenceDate: 0.1 + Double(index))),
                    ]
                samples.append(
                    QuantitySample(
                        .distanceCycling, odd[index % odd.count], index % 6 == 0 ? .kilometer : .meter,
                        at: Date(timeIntervalSinceReferenceDate: start), end: Date(timeIntervalSinceReferenceDate: end),
                        source: index % 2 == 0 ? strap : twin, metadata: metadata))
            }
            let id = UUID()
            try store.save(minimalWorkout(id, start: t(0), end: t(10)), samples: samples)
            let back = try store.samples(workout: id)
            let indexed: [(offset: Int, element: QuantitySample)] = Array(samples.enumerated())
            let expected = indexed.sorted { (a, b) -> Bool in
                a.element.start != b.element.start ? a.element.start < b.element.start : a.offset < b.offset
            }.map(\.element)
            #expect(back.count == expected.count, "\(count) samples")
            #expect(back.map(bits) == expected.map(bits), "\(count) samples")
            #expect(back.map(\.quantity.unit) == expected.map(\.quantity.unit), "\(count) samples")
            #expect(back.map(\.source) == expected.map(\.source), "\(count) samples")
            #expect(back.map(\.metadata) == expected.map(\.metadata), "\(count) samples")
        }
    }

    @Test("route points at chunk edges (4,096 and 4,097) with missing altitude, speed and course come back exactly", arguments: Backend.available)
    func routeAtChunkEdgesRoundTripsExactly(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        func routeBits(_ point: RoutePoint) -> [UInt64?] {
            [
                point.date.timeIntervalSinceReferenceDate.bitPattern, point.latitude.bitPattern,
                point.longitude.bitPattern, point.altitude?.bitPattern, point.speed?.bitPattern,
                point.course?.bitPattern, point.horizontalAccuracy?.bitPattern,
            ]
        }
        for count in [0, 1, 4096, 4097] {
            var route: [RoutePoint] = []
            for index in 0..<count {
                let latitude: Double = index % 9 == 0 ? -0.0 : 45.123_456_7 + Double(index) * 1e-7
                let longitude: Double = index % 5 == 0 ? .leastNonzeroMagnitude : 180 / 2_147_483_648 * Double(index)
                let altitude: Double? = index % 3 == 0 ? nil : -0.0
                let speed: Double? = index % 4 == 0 ? nil : 1e300
                let course: Double? = index % 2 == 0 ? nil : 0.1 + 0.2
                route.append(
                    RoutePoint(
                        date: t(Double(index / 2)), latitude: latitude, longitude: longitude, altitude: altitude,
                        speed: speed, course: course, horizontalAccuracy: nil))
            }
            let id = UUID()
            try store.save(minimalWorkout(id, start: t(0), end: t(10)), route: route)
            #expect(try store.route(workout: id).map(routeBits) == route.map(routeBits), "\(count) points")
        }
    }

    /// SQLite only: the chunk bytes are the store's (ChunkCodec), the same for both backends; PostgreSQL's
    /// path for damaged bytes is `corruptChunkIsATypedError`. Thousands of rewrites stay on a local file.
    @Test("every one-byte change, truncation or extension of a chunk decodes or is a typed error naming the workout")
    func everyDamagedChunkIsATypedErrorOrDecodes() throws {
        let (store, folder) = try freshStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let id = UUID()
        var samples: [QuantitySample] = []
        for index in 0..<40 {
            let value: Double = index % 3 == 0 ? -0.0 : 0.1 + Double(index) * 0.3
            let unit: QuantityUnit = index % 2 == 0 ? .kilometer : .meter
            let metadata: Metadata = index % 4 == 0 ? ["a": .int(index)] : [:]
            let start = Double(index) * 1.5
            samples.append(
                QuantitySample(
                    .distanceCycling, value, unit, at: t(start), end: t(start + 1), source: bike, metadata: metadata))
        }
        let route = (0..<40).map { index in
            RoutePoint(
                date: t(Double(index)), latitude: 45 + Double(index) * 1e-5, longitude: 6,
                altitude: index % 2 == 0 ? nil : 3, speed: 1.5)
        }
        try store.save(minimalWorkout(id, start: t(0), end: t(100)), samples: samples, route: route)
        let queue = try DatabaseQueue(path: store.path)
        defer { try? queue.close() }
        for table in ["sample_chunk", "route_chunk"] {
            let original = try #require(try queue.read { db in try Data.fetchOne(db, sql: "SELECT data FROM \(table)") })
            for position in 0..<original.count {
                for value: UInt8 in [0xFF, original[position] ^ 1] {
                    var bytes = [UInt8](original)
                    bytes[position] = value
                    let variants = position == 0 ? [bytes, bytes + [0x80, 0x80]] : [bytes, Array(bytes[..<position])]
                    for variant in variants {
                        try queue.write { db in
                            try db.execute(sql: "UPDATE \(table) SET data = ?", arguments: [Data(variant)])
                        }
                        do {
                            if table == "sample_chunk" {
                                _ = try store.samples(workout: id)
                            } else {
                                _ = try store.route(workout: id)
                            }
                        } catch {
                            guard case .corruptChunk(let workout, _) = error else {
                                Issue.record("\(table) byte \(position) = \(value): \(error)")
                                continue
                            }
                            #expect(workout == id)
                        }
                    }
                }
            }
            try queue.write { db in try db.execute(sql: "UPDATE \(table) SET data = ?", arguments: [original]) }
        }
        #expect(try store.samples(workout: id) == samples)
    }
}
